import ContainerKit
import Foundation
import Testing

@testable import ContainerKitCLI

#if canImport(Glibc)
    import Glibc
#endif

/// What the commands do when their output cannot be written or their input cannot be read: say so and exit with a
/// failure, never crash (`FileHandle`'s `write(_:)` and `availableData` trap on a failed call: `containerkit lint >
/// /dev/full` and `run --events <a directory>` died with SIGILL).
struct OutputFailureTests {
    /// A stream on `/dev/full`, where every write fails with `ENOSPC`.
    static func fullStream() throws -> (StandardStream, Int32) {
        let descriptor = open("/dev/full", O_WRONLY)
        try #require(descriptor >= 0, "/dev/full cannot be opened")
        return (StandardStream(descriptor: descriptor), descriptor)
    }

    @Test func aStreamThatCannotBeWrittenKeepsItsFirstErrorAndWritesNothingMore() throws {
        let (stream, descriptor) = try Self.fullStream()
        defer { close(descriptor) }
        #expect(stream.failure == nil)
        stream.write("a line\n")
        #expect(stream.failure == String(cString: strerror(ENOSPC)))
        stream.write("another line\n")
        #expect(stream.failure == String(cString: strerror(ENOSPC)))
    }

    @Test func aReportThatCannotBeWrittenIsAFailureSaidOnStandardError() async throws {
        let (stream, descriptor) = try Self.fullStream()
        defer { close(descriptor) }
        let captured = CapturedOutput()
        let output = CommandOutput(
            out: { stream.write($0) },
            err: { captured.output.error(String($0.dropLast())) },
            outFailure: { stream.failure }
        )
        let code = await CLI.main(["lint", "--list-rules"], output: output, environment: [:])
        #expect(code == ExitCode.failure)
        #expect(
            captured.standardError.contains("the output could not be written: \(String(cString: strerror(ENOSPC)))")
        )
        // A command that already failed keeps its own code.
        let usage = await CLI.main(["lint", "--bogus"], output: output, environment: [:])
        #expect(usage == ExitCode.usage)
    }

    @Test(arguments: ["run", "preview", "diff"])
    func anEventsPathThatIsADirectoryIsRefusedByName(command: String) async throws {
        let directory = NSTemporaryDirectory() + "containerkit-events-dir-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let music = RunCommandTests.music
        let drafts = RunCommandTests.root + "/Containers"
        let arguments: [String]
        switch command {
        case "run": arguments = ["run", music, "--events", directory]
        case "preview":
            arguments = [
                "preview", "tagmanager.c.com.example://preview/p?id=GTM-MUSIC01&gtm_auth=abc&gtm_preview=1",
                "--drafts", drafts, "--events", directory,
            ]
        default: arguments = ["diff", music, music, "--events", directory]
        }
        let captured = CapturedOutput()
        let code = await CLI.main(arguments, output: captured.output, environment: [:])
        #expect(code == ExitCode.failure)
        #expect(captured.standardError.contains("'\(directory)' is a directory, not an events file"))
    }

    @Test func inputThatFailsToReadIsOneProblemInThePlaceOfTheLineNotACrash() throws {
        // A directory opened as a file: every read fails (EISDIR), as standard input redirected from one does.
        let handle = try #require(FileHandle(forReadingAtPath: NSTemporaryDirectory()))
        defer { try? handle.close() }
        let lines = Array(PushInput(handle: handle, ownsHandle: false))
        #expect(lines.count == 1)
        guard case .invalid(let number, let problem)? = lines.first else {
            Issue.record("expected one problem, got \(lines)")
            return
        }
        #expect(number == 1 && problem.code == "read_error")
        #expect(problem.message.contains(String(cString: strerror(EISDIR))), "\(problem.message)")
    }
}
