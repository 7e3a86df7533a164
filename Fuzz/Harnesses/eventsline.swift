// The events reader of `run`, `preview` and `diff`: the input is an events file, read line by line and parsed, or as
// a data-layer dump item by item; the dump's splitter must find the same items however the input is cut.
import ContainerKit
import Foundation

@testable import ContainerKitCLI

let eventsPath = NSTemporaryDirectory() + "containerkit-fuzz-events-\(getpid()).jsonl"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEventsLine(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    guard FileManager.default.createFile(atPath: eventsPath, contents: Data(bytes)),
        let handle = FileHandle(forReadingAtPath: eventsPath)
    else { return 0 }
    defer { try? handle.close() }
    var input = PushInput(handle: handle, ownsHandle: false)
    input.maximumLineLength = 4096
    // The members `--time-key timestamp --session-key user_id` read, as a recorded log has them.
    input.keys = PushInput.Keys(time: "timestamp", session: "user_id")
    for _ in input {}
    let cut = bytes.isEmpty ? 0 : Int(bytes[bytes.count / 2]) % (bytes.count + 1)
    precondition(
        DataLayerDump.pieces(of: bytes, cutAt: cut, limit: 4096) == DataLayerDump.pieces(of: bytes, limit: 4096),
        "the splitter found other items with its input cut at \(cut)"
    )
    return 0
}
