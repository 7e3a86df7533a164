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
    for _ in input {}
    var whole: [DataLayerDump.Piece] = []
    var splitter = DataLayerDump(limit: 4096)
    splitter.feed(bytes, into: &whole)
    splitter.finish(into: &whole)
    let cut = bytes.isEmpty ? 0 : Int(bytes[bytes.count / 2]) % (bytes.count + 1)
    var pieces: [DataLayerDump.Piece] = []
    var cutSplitter = DataLayerDump(limit: 4096)
    cutSplitter.feed(bytes[..<cut], into: &pieces)
    cutSplitter.feed(bytes[cut...], into: &pieces)
    cutSplitter.finish(into: &pieces)
    precondition(pieces == whole, "the splitter found other items with its input cut at \(cut)")
    return 0
}
