import ContainerKit
import ContainerKitTesting
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ContainerKitHTTP

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The FoundationNetworking path of ``BoundedHTTPRequest`` (the one `https://` takes). No TLS server runs on
/// loopback, so its data delegate is driven directly, block by block, and the transport itself is exercised
/// against loopback servers over plain `http://` (FoundationNetworking serves both schemes alike).
@Suite struct URLSessionHTTPTransportTests {
    /// A delegate with a session and a data task that is never resumed (nothing is sent anywhere).
    final class Harness: Sendable {
        let delegate: BoundedHTTPDelegate
        let session: URLSession
        let task: URLSessionDataTask
        let url = URL(string: "https://127.0.0.1:9/never-sent")!

        private init(maximumBytes: Int) {
            delegate = BoundedHTTPDelegate(maximumBytes: maximumBytes)
            session = URLSession(configuration: .ephemeral, delegate: delegate, delegateQueue: nil)
            task = session.dataTask(with: url)
        }

        /// A harness made off the cooperative pool (``BlockingCall``): `dataTask` waits for FoundationNetworking's
        /// work queue, which another test's endless answer may hold.
        ///
        /// It is handed over under a lock as well as by the continuation: the thread sanitizer on Linux does not
        /// always take a continuation resumed on a Dispatch queue as ordering the harness's initialization before
        /// the test reads it (1 run in 6 reported a race on `task`); under `make tsan` the lock is a pthread mutex it
        /// understands.
        static func make(maximumBytes: Int) async -> Harness {
            let handover = Handover()
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                BlockingCall.run {
                    let harness = Harness(maximumBytes: maximumBytes)
                    handover.harness.withLock { $0 = harness }
                    continuation.resume()
                }
            }
            return handover.harness.withLock { $0! }
        }

        private final class Handover: Sendable {
            let harness = Mutex<Harness?>(nil)
        }

        /// Delivers a response header; returns the delegate's disposition.
        func respond(_ headers: [String: String] = [:]) -> URLSession.ResponseDisposition? {
            let response = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: headers)!
            let disposition = Mutex<URLSession.ResponseDisposition?>(nil)
            delegate.urlSession(session, dataTask: task, didReceive: response) { value in
                disposition.withLock { $0 = value }
            }
            return disposition.withLock { $0 }
        }

        /// Delivers one body block.
        func deliver(_ count: Int) {
            delegate.urlSession(session, dataTask: task, didReceive: Data(repeating: 0x20, count: count))
        }

        /// Ends the session, off the cooperative pool (it waits for FoundationNetworking's work queue too).
        func close() {
            let session = self.session
            BlockingCall.run { session.invalidateAndCancel() }
        }
    }

    static func failure(_ outcome: BoundedHTTPDelegate.Outcome?) -> BoundedHTTPError? {
        if case .failure(let error)? = outcome { return error }
        return nil
    }

    @Test func theDelegateDropsTheBlockThatPassesTheLimitAndCancels() async {
        let harness = await Harness.make(maximumBytes: 40 << 10)
        defer { harness.close() }
        #expect(harness.respond() == .allow)
        harness.deliver(16 << 10)
        harness.deliver(16 << 10)
        #expect(harness.delegate.bufferedByteCount == 32 << 10)
        #expect(harness.delegate.outcome == nil)
        // The third block would make 48 KiB: it is not appended, what was kept is released, the task cancelled.
        harness.deliver(16 << 10)
        #expect(Self.failure(harness.delegate.outcome)?.kind == .tooLarge(declared: nil))
        #expect(harness.delegate.bufferedByteCount == 0)
        #expect(harness.delegate.cancellationRequested)
        // Blocks FoundationNetworking had already queued are dropped unread.
        for _ in 0..<8 { harness.deliver(16 << 10) }
        #expect(harness.delegate.bufferedByteCount == 0)
        #expect(harness.delegate.peakBufferedByteCount == 32 << 10)
    }

    @Test func aBodyOfExactlyTheLimitIsKept() async {
        let harness = await Harness.make(maximumBytes: 40 << 10)
        defer { harness.close() }
        #expect(harness.respond(["Content-Type": "application/json"]) == .allow)
        harness.deliver(16 << 10)
        harness.deliver(16 << 10)
        harness.deliver(8 << 10)
        harness.delegate.urlSession(harness.session, task: harness.task, didCompleteWithError: nil)
        let response = try? harness.delegate.outcome?.get()
        #expect(response?.body.count == 40 << 10)
        #expect(response?.status == 200)
        #expect(harness.delegate.peakBufferedByteCount == 40 << 10)
    }

    @Test func aDeclaredLengthOverTheLimitIsRefusedBeforeAnyBodyByte() async {
        let harness = await Harness.make(maximumBytes: 1024)
        defer { harness.close() }
        #expect(harness.respond(["Content-Length": "1025"]) == .cancel)
        #expect(Self.failure(harness.delegate.outcome)?.kind == .tooLarge(declared: 1025))
        #expect(harness.delegate.cancellationRequested)
        harness.deliver(512)
        #expect(harness.delegate.peakBufferedByteCount == 0)
    }

    @Test func anEncodedAnswerIsRefusedWhenItsHeaderArrives() async {
        let harness = await Harness.make(maximumBytes: 1024)
        defer { harness.close() }
        #expect(harness.respond(["Content-Encoding": "gzip"]) == .cancel)
        #expect(Self.failure(harness.delegate.outcome)?.kind == .unsupportedEncoding("gzip"))
    }

    // MARK: The transport on loopback

    func send(
        _ response: LoopbackHTTPServer.Response,
        maximumBytes: Int = 64 * 1024
    ) async throws -> (Result<BoundedHTTPResponse, BoundedHTTPError>, LoopbackHTTPServer) {
        let server = try LoopbackHTTPServer { _ in response }
        let request = BoundedHTTPRequest(
            url: server.baseURL.appendingPathComponent("r"),
            maximumResponseBytes: maximumBytes,
            deadline: .seconds(3600)
        )
        let result = await HTTPClient.withClientForOneRequest {
            client -> Result<BoundedHTTPResponse, BoundedHTTPError> in
            do throws(BoundedHTTPError) {
                return .success(try await URLSessionHTTPTransport.send(request, client: client))
            } catch {
                return .failure(error)
            }
        }
        return (result, server)
    }

    @Test func theTransportReadsAnAnswerWithinTheLimit() async throws {
        let (result, server) = try await send(.container(Array("{}".utf8), etag: "\"v1\""))
        defer { server.stop() }
        let response = try result.get()
        #expect(response.body == Array("{}".utf8))
        #expect(response.header("etag") == "\"v1\"")
        #expect(server.requests.first?.headers["accept-encoding"] == "identity")
    }

    @Test func theTransportCutsAnEndlessBodyOffAtTheLimit() async throws {
        // 1 MiB without a length, then the connection stays open: the exchange can only end by the client
        // giving up at its 64 KiB limit (the deadline is out of reach), however fast libcurl reads ahead.
        let (result, server) = try await send(.fault(.oversizedBody(1 << 20)))
        defer { server.stop() }
        if case .failure(let error) = result {
            #expect(error.kind == .tooLarge(declared: nil))
        } else {
            Issue.record("expected the endless body to fail")
        }
    }

    @Test func theTransportRefusesAGzipBomb() async throws {
        let (result, server) = try await send(LoopbackHTTPServer.Response.gzipBomb(limit: 64 << 20))
        // The refusal answers at once: FoundationNetworking's cancellation (which can wait for libcurl to let
        // go of the session's queue) no longer holds the answer until the whole bomb has been inflated.
        #expect(server.bytesStreamed < 64 << 20)
        defer { server.stop() }
        if case .failure(let error) = result {
            #expect(error.kind == .unsupportedEncoding("gzip"))
        } else {
            Issue.record("expected the gzip answer to be refused")
        }
    }
}
