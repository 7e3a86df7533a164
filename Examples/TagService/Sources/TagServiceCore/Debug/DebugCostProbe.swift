import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// What the debug page costs a push, counted in-process: the service assembled as `TagService` assembles it
/// (``TagServiceApplication``: the tag manager and its observer, the durable queue, the sessions, the debug hub),
/// its services running, and `POST /v1/events` requests handed to its events handler one after another — the
/// request's body read and decoded, the push, the wait for its records' commit, the answer — without the network.
///
/// `BENCH_DEBUG_SIDE_BY_SIDE=1 make bench-service` runs it under callgrind (`debug-cost-probe`), with two numbers
/// of pushes for each ``Mode``: the difference of the two counts over the difference of the pushes is the
/// instructions of one push, start-up cancelled; the same binary, inputs and hashing seed give the same count on a
/// busy machine, where timings move by ±10 %. Each push is a new user's first event, as in the load test.
public enum DebugCostProbe {
    /// The debug page's three states.
    public enum Mode: String, Sendable, CaseIterable {
        /// No `--debug-token`: the page does not exist.
        case off
        /// The page on, nobody followed.
        case on
        /// The page on, one user followed whom the pushes never name (``followedUser``).
        case followingOther = "following_other"
    }

    /// The user followed in ``Mode/followingOther``.
    public static let followedUser = "bench-followed-user"

    /// Why the probe could not run.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// What went wrong.
        public let description: String
    }

    /// Starts the service over `containers` (a directory of container files) with its queue in `work` (a directory
    /// the probe may fill), pushes `events` events through its events handler and returns how many were answered
    /// 200. The service's listeners bind 127.0.0.1 on free ports; its tasks go on running (exit the process after).
    public static func run(mode: Mode, events: Int, containers: String, work: String) async throws -> Int {
        var arguments = [
            "--containers", containers, "--queue", work + "/queue", "--host", "127.0.0.1", "--port", "0",
            "--log-level", "error",
        ]
        if mode != .off {
            arguments += ["--debug-token", "debug-cost-probe-token-0123456789", "--debug-port", "0"]
        }
        guard case .run(let configuration) = try TagServiceConfiguration.parse(arguments, environment: [:]) else {
            throw Failure(description: "the probe's arguments did not parse to a configuration")
        }
        var logger = Logger(label: "debug-cost-probe")
        logger.logLevel = .error
        let (listening, listened) = AsyncStream<Int>.makeStream()
        let service = try await TagServiceApplication(configuration: configuration, logger: logger) { port in
            listened.yield(port)
            listened.finish()
        }
        Task { try await service.application.run() }
        for await _ in listening { break }
        if mode == .followingOther {
            guard let debug = service.debug else { throw Failure(description: "the debug page is off") }
            try debug.follow(followedUser)
        }
        let titles = ["So What", "Blue in Green", "All Blues", "Freddie Freeloader", "Flamenco Sketches"]
        var answered = 0
        for counter in stride(from: 1, through: events, by: 1) {
            // The load test's body (bench/events.lua): a new user's "played song".
            let body =
                #"{"user_id":"user-\#(counter)","event":"played song","parameters":{"title":""#
                + titles[counter % titles.count] + #"","position":\#(counter)}}"#
            let head = HTTPRequest(
                method: .post,
                scheme: "http",
                authority: "127.0.0.1",
                path: "/v1/events",
                headerFields: [.contentType: "application/json", .contentLength: "\(body.utf8.count)"]
            )
            let request = Request(head: head, body: RequestBody(buffer: ByteBuffer(string: body)))
            do {
                let response = try await service.events.handle(request, pathUser: nil)
                if response.status == .ok { answered += 1 }
            } catch {
                throw Failure(description: "push \(counter) was refused: \(error)")
            }
        }
        return answered
    }
}
