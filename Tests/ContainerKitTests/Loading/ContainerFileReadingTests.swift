import Foundation
import Testing

@testable import ContainerKit

#if canImport(Glibc)
    import Glibc
#endif

/// `ContainerLoader.readFile`: what cannot be seeked (a pipe, `/dev/stdin`, a device) is read to its end within the
/// limit, and a failed read says why in the system's words (Foundation's `seekToEnd` made a pipe "The operation
/// could not be completed. (NSCocoaErrorDomain error 256.)").
struct ContainerFileReadingTests {
    @Test func aPipeIsReadToItsEnd() throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let text = #"{"resource": {"macros": [], "tags": [], "predicates": [], "rules": []}}"#
        _ = text.withCString { write(ends[1], $0, strlen($0)) }
        close(ends[1])
        let bytes = try ContainerLoader.readFile("/dev/fd/\(ends[0])", limit: 1 << 20)
        #expect(String(decoding: bytes, as: UTF8.self) == text)
    }

    @Test func aDeviceWithoutASizeIsCutAtTheLimit() {
        let error = #expect(throws: ContainerError.self) { try ContainerLoader.readFile("/dev/zero", limit: 1000) }
        #expect(error?.code == .fileTooLarge)
        #expect(error?.message == "file grew past the limit of 1000 bytes")
    }

    @Test func aReadThatFailsSaysWhyWithItsErrno() {
        // Reading this process's memory at offset 0 fails with EIO.
        let error = #expect(throws: ContainerError.self) { try ContainerLoader.readFile("/proc/self/mem", limit: 1000) }
        #expect(error?.code == .io)
        #expect(error?.message == "cannot read '/proc/self/mem': input/output error")
        #expect(error?.errorNumber == EIO)
    }

    @Test func aServiceThatWantsRegularFilesIsNotHeldByAFIFO() throws {
        let path = NSTemporaryDirectory() + "GTM-FIFO\(UInt16.random(in: 0...9999)).json"
        try #require(mkfifo(path, 0o600) == 0)
        defer { unlink(path) }
        // Without a writer, opening it would wait for one: refused before it is opened.
        let error = #expect(throws: ContainerError.self) {
            try ContainerLoader.readFile(path, limit: 1000, regularOnly: true)
        }
        #expect(
            error?.message.hasSuffix("is not a regular file (a FIFO, socket or device), which a container file must be")
                == true
        )
    }

    @Test func aMissingFileAndADirectoryAreNamed() {
        let missing = #expect(throws: ContainerError.self) {
            try ContainerLoader.readFile("/nonexistent-\(UUID().uuidString).json", limit: 1000)
        }
        #expect(missing?.message.hasPrefix("no such file '/nonexistent-") == true)
        let directory = #expect(throws: ContainerError.self) { try ContainerLoader.readFile("/tmp", limit: 1000) }
        #expect(directory?.message == "'/tmp' is a directory")
    }
}
