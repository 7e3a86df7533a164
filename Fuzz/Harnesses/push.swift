// Load + one push: the container is the input up to the first NUL; the push is the JSON object after it
// (or a fixed event when there is none).
import ContainerKit

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPush(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let (containerBytes, pushBytes) = splitAtNUL(fuzzBytes(data, size))
    guard let container = try? ContainerLoader().load(bytes: containerBytes, file: "GTM-FUZZ.json") else { return 0 }
    let manager = TagManager(logger: StandardErrorLogger(minimumLevel: .none))
    manager.add(container)
    // A page's URL and referrer, so that a pushed `gtm.url` or `gtm.referrer` is read against them.
    let context = ClientContext(pageURL: "https://www.example.com/a/b.html?c=d#e", referrer: "")
    let layer = manager.makeDataLayer(context: context, debug: true)
    if let pushBytes, case .object(let message)? = try? Value(jsonBytes: pushBytes) {
        _ = layer.push(message)
    } else {
        _ = layer.push(event: "screen_view", parameters: ["screen_name": "home", "value": 12.5])
    }
    return 0
}
