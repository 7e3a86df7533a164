// The events-line reader of `run` and `preview`: the input is an events file, read line by line and parsed.
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
    var reader = LineReader(handle: handle, maximumLineLength: 4096)
    var number = 0
    while let line = reader.nextBytes() {
        number += 1
        _ = PushInput.parse(line, number: number)
    }
    return 0
}
