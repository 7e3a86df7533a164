import ContainerKit
import Foundation
import Testing
import UsersTrackStandIn

#if canImport(Glibc)
    import Glibc
#endif

/// Event IDs on the real executable (issue 41): a client that sends every event twice with its `message_id`, and
/// a service killed with `kill -9` while requests are in flight (some committed and not answered): every event
/// reaches the `/users/track` stand-in exactly once.
@Suite(.serialized) struct DuplicateFieldTests {
    /// A free port on 127.0.0.1 (bound, read and closed): the stand-in is started there only at the end, so that
    /// nothing is delivered while the service is being killed (a batch in flight then would be delivered again,
    /// with the same records: at-least-once delivery, not what this test is about).
    static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        try #require(bound)
        return UInt16(bigEndian: address.sin_port)
    }

    /// One event: `title` for `user`, with `message_id` `id`.
    static func body(user: String, title: String, id: String) -> String {
        #"{"user_id": "\#(user)", "event": "played song", "parameters": {"title": "\#(title)"}, "message_id": "\#(id)"}"#
    }

    @Test func everyEventSentTwiceAndRetriedAfterKill9ArrivesOnce() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let port = try Self.freePort()
        let arguments = OperatingTests.arguments(fixture)
        let environment = ["BRAZE_REST_ENDPOINT": "http://127.0.0.1:\(port)", "BRAZE_REST_API_KEY": "test"]
        var titles: [String] = []
        var duplicates = 0
        for round in 0..<3 {
            let events = (0..<24).map { n in
                (user: "user-\(n % 6)", title: "r\(round)-e\(n)", id: "message-\(round)-\(n)")
            }
            titles += events.map(\.title)
            // All of them at once, and the service killed while they are in flight.
            let doomed = try ServiceProcess(arguments, environment: environment)
            try await doomed.waitUntilListening()
            await withTaskGroup(of: Void.self) { group in
                for event in events {
                    group.addTask {
                        let body = Self.body(user: event.user, title: event.title, id: event.id)
                        _ = try? await doomed.post("/v1/events", body: body)
                    }
                }
                group.addTask {
                    try? await Task.sleep(for: .milliseconds(15 + 10 * round))
                    kill(doomed.process.processIdentifier, SIGKILL)
                }
            }
            #expect(await doomed.exit() == SIGKILL)
            // The client retries every event it sent, then sends each once more: the retries of what was
            // committed are duplicates, the rest is pushed now, and every second send is a duplicate.
            let service = try ServiceProcess(arguments, environment: environment)
            try await service.waitUntilListening()
            for event in events {
                let body = Self.body(user: event.user, title: event.title, id: event.id)
                let (retryStatus, retry) = try await service.post("/v1/events", body: body)
                #expect(retryStatus == 200)
                if retry["duplicate"] as? Bool == true { duplicates += 1 }
                let (againStatus, again) = try await service.post("/v1/events", body: body)
                #expect(againStatus == 200 && again["duplicate"] as? Bool == true, "\(event.id) sent again")
            }
            #expect(await service.stop(SIGKILL) == SIGKILL)
        }
        #expect(duplicates > 0, "some events were committed before the kill, and their retries were duplicates")

        // Now the stand-in listens: the last run delivers everything, each event once.
        let standIn = try UsersTrackStandIn(port: port)
        try await standIn.withRunning {
            let service = try ServiceProcess(arguments, environment: environment)
            try await service.waitUntilListening()
            let deadline = ContinuousClock.now + .seconds(120)
            while standIn.deliveredTitles.count < titles.count, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(await service.stop(SIGTERM) == 0)
        }
        let delivered = standIn.deliveredTitles
        #expect(Set(delivered.keys) == Set(titles), "every event arrived")
        let twice = delivered.filter { $0.value != 1 }
        #expect(twice.isEmpty, "events that arrived more than once: \(twice)")
    }
}
