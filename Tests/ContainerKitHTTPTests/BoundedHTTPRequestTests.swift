import ContainerKit
import ContainerKitHTTP
import ContainerKitTesting
import Foundation
import TestSupport
import Testing

@Suite struct BoundedHTTPRequestTests {
    typealias Hostile = LoopbackHTTPServer.Response

    func send(
        _ response: LoopbackHTTPServer.Response,
        maximumBytes: Int = 64 * 1024,
        deadline: Duration = .seconds(3600)
    ) async throws -> (Result<BoundedHTTPResponse, BoundedHTTPError>, LoopbackHTTPServer) {
        let server = try LoopbackHTTPServer { _ in response }
        let request = BoundedHTTPRequest(
            url: server.baseURL.appendingPathComponent("r"),
            maximumResponseBytes: maximumBytes,
            deadline: deadline
        )
        do throws(BoundedHTTPError) {
            return (.success(try await request.send()), server)
        } catch {
            return (.failure(error), server)
        }
    }

    static func error(_ result: Result<BoundedHTTPResponse, BoundedHTTPError>) -> BoundedHTTPError? {
        if case .failure(let error) = result { return error }
        return nil
    }

    @Test func asksForUnencodedAnswersAndReadsOne() async throws {
        let (result, server) = try await send(.container(Array("{}".utf8), etag: "\"v1\""))
        defer { server.stop() }
        let response = try result.get()
        #expect(response.status == 200)
        #expect(response.body == Array("{}".utf8))
        #expect(response.header("ETag") == "\"v1\"")
        #expect(server.requests.first?.headers["accept-encoding"] == "identity")
    }

    @Test func refusesAGzipBombBeforeInflatingAByte() async throws {
        let (result, server) = try await send(Hostile.gzipBomb(limit: 64 << 20))
        defer { server.stop() }
        #expect(Self.error(result)?.kind == .unsupportedEncoding("gzip"))
    }

    @Test func stopsReadingAnEndlessBodyAtTheLimit() async throws {
        let (result, server) = try await send(Hostile.endless(limit: 256 << 20))
        defer { server.stop() }
        #expect(Self.error(result)?.kind == .tooLarge(declared: nil))
        // The client stopped reading at the limit: the server could push the socket buffers' worth, no more.
        #expect(server.bytesStreamed < 64 << 20)
    }

    @Test func endsASlowDripAtTheDeadline() async throws {
        let (result, server) = try await send(
            Hostile.drip(),
            maximumBytes: 1 << 20,
            deadline: .milliseconds(300)
        )
        defer { server.stop() }
        #expect(Self.error(result)?.kind == .deadlineExceeded)
    }

    @Test func readsAChunkedAnswerAndRefusesOneOverTheLimit() async throws {
        let answer =
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nT: 1\r\n\r\n"
        let (result, server) = try await send(.garbage(Array(answer.utf8)))
        defer { server.stop() }
        #expect(try result.get().body == Array("abc0123456789abcdef".utf8))
        let (small, other) = try await send(.garbage(Array(answer.utf8)), maximumBytes: 10)
        defer { other.stop() }
        #expect(Self.error(small)?.kind == .tooLarge(declared: nil))
    }

    @Test func refusesADeclaredLengthOverTheLimitBeforeReadingTheBody() async throws {
        let (result, server) = try await send(.container([UInt8](repeating: 32, count: 100)), maximumBytes: 99)
        defer { server.stop() }
        #expect(Self.error(result)?.kind == .tooLarge(declared: 100))
    }

    @Test func refusesAnyTransferEncodingButChunked() async throws {
        let answer = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"
        let (result, server) = try await send(.garbage(Array(answer.utf8)))
        defer { server.stop() }
        #expect(Self.error(result)?.kind == .unsupportedEncoding("gzip, chunked"))
    }

    @Test func postsTheBodyWithItsLength() async throws {
        let server = try LoopbackHTTPServer { request in
            .text("\(request.method) \(request.path) \(request.headers["Content-Type"] ?? "") \(request.bodyText)")
        }
        defer { server.stop() }
        var request = BoundedHTTPRequest(
            url: server.baseURL.appendingPathComponent("users/track"),
            maximumResponseBytes: 1024,
            deadline: .seconds(3600)
        )
        request.method = "POST"
        request.headers = [("Content-Type", "application/json"), ("Content-Length", "999")]
        request.body = Array(#"{"a":1}"#.utf8)
        let response = try await request.send()
        #expect(String(decoding: response.body, as: UTF8.self) == #"POST /users/track application/json {"a":1}"#)
    }

    @Test func endsWhenTheCallingTaskIsCancelled() async throws {
        let server = try LoopbackHTTPServer { _ in .hang }
        defer { server.stop() }
        let request = BoundedHTTPRequest(url: server.baseURL, maximumResponseBytes: 1024, deadline: .seconds(3600))
        let task = Task { () -> BoundedHTTPError? in
            do throws(BoundedHTTPError) {
                _ = try await request.send()
                return nil
            } catch {
                return error
            }
        }
        task.cancel()
        #expect(await task.value?.kind == .cancelled)
    }

    @Test func refusesAURLThatIsNotHTTP() async throws {
        let request = BoundedHTTPRequest(
            url: URL(string: "ftp://127.0.0.1/x")!,
            maximumResponseBytes: 1,
            deadline: .seconds(1)
        )
        await #expect(throws: BoundedHTTPError(.invalidURL, "not an http or https url with a host")) {
            _ = try await request.send()
        }
    }
}
