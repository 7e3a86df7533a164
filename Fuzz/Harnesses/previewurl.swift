// The preview URL parser.
import ContainerKit

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPreviewURL(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = String(decoding: fuzzBytes(data, size), as: UTF8.self)
    if let url = try? PreviewURL(parsing: text) {
        _ = url.description
        _ = url.debugDescription
    }
    return 0
}
