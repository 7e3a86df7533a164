// The loader: JSON, XML property lists and binary property lists (the input picks the format, as a file
// does), then compilation.
import ContainerKit

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLoader(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    let loader = ContainerLoader()
    if let document = try? loader.readDocument(bytes: bytes, file: "GTM-FUZZ.json") {
        _ = try? loader.compile(document)
    }
    return 0
}
