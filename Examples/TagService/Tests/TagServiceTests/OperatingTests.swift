import ContainerKit
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What an operator relies on (the README's "Operating it"), checked on the real executable: real files,
/// real signals, real exit codes.
@Suite(.serialized) struct OperatingTests {
    /// The arguments of a service over `fixture`'s directories.
    static func arguments(_ fixture: TestService, _ extra: [String] = []) -> [String] {
        var arguments = [
            "--containers", fixture.configuration.containersDirectory,
            "--queue", fixture.configuration.queueDirectory,
        ]
        if let sessions = fixture.configuration.sessionsDirectory { arguments += ["--sessions", sessions] }
        return arguments + extra
    }

    @Test func sessionsSurviveKill9() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let arguments = Self.arguments(fixture, ["--session-save-interval", "0.05"])

        let first = try ServiceProcess(arguments)
        try await first.waitUntilListening()
        let (status, answer) = try await first.postEvent(user: "ada")
        #expect(status == 200)
        #expect(ServiceProcess.firedNames(answer) == ["Braze - played song", "Braze - first play"])
        // The change is saved in the background within the save interval; then the process is killed.
        #expect(await first.nextLine(containing: "sessions saved") != nil)
        #expect(await first.stop(SIGKILL) == SIGKILL)

        let second = try ServiceProcess(arguments)
        try await second.waitUntilListening()
        let (again, continued) = try await second.postEvent(user: "ada")
        #expect(again == 200)
        // The once-per-load tag does not fire again: the session came back.
        #expect(ServiceProcess.firedNames(continued) == ["Braze - played song"])
        #expect(await second.stop(SIGTERM) == 0)
    }

    @Test(arguments: [
        ("containers", "the containers directory (--containers)"),
        ("sessions", "the parent directory of the sessions directory (--sessions)"),
    ])
    func aBadPathIsRefusedAtStartWithANonZeroExit(missing: String, message: String) async throws {
        var fixture = try TestService()
        defer { fixture.remove() }
        if missing == "containers" {
            fixture.configuration.containersDirectory = fixture.root.appendingPathComponent("absent").path
        } else {
            fixture.configuration.sessionsDirectory = fixture.root.appendingPathComponent("absent/sessions").path
        }
        let service = try ServiceProcess(Self.arguments(fixture))
        #expect(await service.exit() == 1)
        #expect(service.log.contains { $0.contains(message) && $0.contains("absent") })
    }

    @Test func sessionFilesArePrivate() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let previous = umask(0o022)
        defer { umask(previous) }
        let service = try ServiceProcess(Self.arguments(fixture, ["--session-save-interval", "0.05"]))
        try await service.waitUntilListening()
        _ = try await service.postEvent(user: "ada")
        #expect(await service.nextLine(containing: "sessions saved") != nil)
        #expect(await service.stop(SIGTERM) == 0)
        let sessions = try #require(fixture.configuration.sessionsDirectory)
        #expect(try Self.mode(sessions) == 0o700)
        let files = try FileManager.default.contentsOfDirectory(atPath: sessions)
        #expect(!files.isEmpty)
        for file in files { #expect(try Self.mode(sessions + "/" + file) == 0o600, "\(file)") }
    }

    static func mode(_ path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }
}
