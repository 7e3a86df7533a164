import ContainerKit
import ContainerKitTesting
import Foundation
import TestSupport
import Testing

extension LifecycleTests {
    @Suite struct HTTPContainerSourceTests {

        func fetch(
            _ response: LoopbackHTTPServer.Response,
            etag: String? = nil,
            maximumBytes: Int = 1 << 20,
            timeout: Duration = .seconds(3600)
        ) async throws -> (Result<ContainerFetchResult, ContainerFetchError>, LoopbackHTTPServer) {
            let server = try LoopbackHTTPServer { _ in response }
            let source = try HTTPContainerSource(base: server.baseURL, maximumBytes: maximumBytes, timeout: timeout)
            do throws(ContainerFetchError) {
                return (.success(try await source.fetch(id: Fixtures.containerID, ifNoneMatch: etag)), server)
            } catch {
                return (.failure(error), server)
            }
        }

        @Test func fetchesTheContainerFromTheRPathWithItsID() async throws {
            let (result, server) = try await fetch(.container(Fixtures.live(), etag: "\"v1\""))
            defer { server.stop() }
            #expect(try result.get() == .container(bytes: Fixtures.live(), etag: "\"v1\""))
            let request = try #require(server.requests.first)
            #expect(request.path == "/r")
            #expect(request.queryItems == ["id": Fixtures.containerID])
            #expect(request.headers["if-none-match"] == nil)
        }

        @Test func sendsIfNoneMatchAndAcceptsNotModified() async throws {
            let (result, server) = try await fetch(.notModified(etag: "\"v1\""), etag: "\"v1\"")
            defer { server.stop() }
            #expect(try result.get() == .notModified)
            #expect(server.requests.first?.headers["if-none-match"] == "\"v1\"")
        }

        @Test func refusesNotModifiedToAnUnconditionalRequest() async throws {
            let (result, server) = try await fetch(.notModified())
            defer { server.stop() }
            #expect(result.failure?.code == .httpStatus)
            #expect(result.failure?.refreshFailure == .serverError)
        }

        @Test(arguments: [403, 404, 500, 503])
        func mapsErrorStatusesToServerErrors(status: Int) async throws {
            let (result, server) = try await fetch(.status(status, body: Array("nope".utf8)))
            defer { server.stop() }
            let error = try #require(result.failure)
            #expect(error.code == .httpStatus)
            #expect(error.status == status)
            #expect(error.refreshFailure == .serverError)
            #expect(error.isRefusal == (status == 403 || status == 404))
        }

        @Test func mapsATruncatedBodyToANetworkError() async throws {
            let body = Fixtures.live()
            let (result, server) = try await fetch(.truncated(Array(body.prefix(100)), declaredLength: body.count))
            defer { server.stop() }
            #expect(result.failure?.refreshFailure == .networkError)
        }

        @Test func mapsGarbageToAServerError() async throws {
            let (result, server) = try await fetch(.garbage(Array("\u{01}\u{02}not http at all\r\n\r\n".utf8)))
            defer { server.stop() }
            #expect(result.failure?.refreshFailure == .serverError)
        }

        @Test func mapsARefusedConnectionToNoNetwork() async throws {
            let refusing = try RefusingPort()
            defer { refusing.close() }
            let source = try HTTPContainerSource(base: refusing.baseURL)
            await #expect(throws: ContainerFetchError.self) {
                do throws(ContainerFetchError) {
                    _ = try await source.fetch(id: Fixtures.containerID, ifNoneMatch: nil)
                } catch {
                    #expect(error.refreshFailure == .noNetwork)
                    throw error
                }
            }
        }

        /// Fetches with `response` on a manual clock, which passes `timeout` once the server holds the request
        /// and the fetch sleeps on its deadline: no test waits for the wall clock.
        func fetchPastTheDeadline(
            _ response: LoopbackHTTPServer.Response,
            timeout: Duration
        ) async throws -> (result: Result<ContainerFetchResult, ContainerFetchError>, clock: ManualClock) {
            let server = try LoopbackHTTPServer { _ in response }
            defer { server.stop() }
            let clock = ManualClock()
            let source = try HTTPContainerSource(base: server.baseURL, timeout: timeout, clock: clock)
            typealias Outcome = Result<ContainerFetchResult, ContainerFetchError>
            let result = await withTaskGroup(of: Outcome?.self) { group -> Outcome? in
                group.addTask {
                    do throws(ContainerFetchError) {
                        return .success(try await source.fetch(id: Fixtures.containerID, ifNoneMatch: nil))
                    } catch {
                        return .failure(error)
                    }
                }
                group.addTask {
                    await server.waitForRequests(1)
                    await clock.waitForSleepers(1)
                    return nil
                }
                // The deadline is asleep on the clock before the fetch ends: nothing else can end it.
                guard case .some(nil) = await group.next() else {
                    Issue.record("the fetch ended before its deadline slept on the clock")
                    group.cancelAll()
                    return nil
                }
                #expect(clock.pendingDeadlines == [clock.now.advanced(by: timeout)])
                clock.advance(by: timeout)
                return await group.next().flatMap { $0 }
            }
            return (try #require(result), clock)
        }

        @Test func mapsASlowAnswerToANetworkErrorAfterTheTimeout() async throws {
            let (result, clock) = try await fetchPastTheDeadline(.hang, timeout: .seconds(1))
            #expect(result.failure?.refreshFailure == .networkError)
            #expect(result.failure?.message.hasSuffix("did not answer in full within 1 seconds") == true)
            #expect(clock.sleeperCount == 0)
        }

        @Test func refusesAnAnswerLargerThanTheLimit() async throws {
            let (result, server) = try await fetch(.container(Fixtures.live()), maximumBytes: 100)
            defer { server.stop() }
            #expect(result.failure?.code == .tooLarge)
            #expect(result.failure?.refreshFailure == .serverError)
        }

        @Test func refusesAGzipAnswerBeforeInflatingIt() async throws {
            let (result, server) = try await fetch(LoopbackHTTPServer.Response.gzipBomb(limit: 64 << 20))
            defer { server.stop() }
            #expect(result.failure?.code == .badResponse)
            #expect(
                result.failure?.message.hasSuffix("sent a 'gzip' encoded answer; only unencoded answers are accepted")
                    == true
            )
        }

        @Test func stopsReadingAnEndlessAnswerAtTheLimit() async throws {
            let (result, server) = try await fetch(LoopbackHTTPServer.Response.endless(), maximumBytes: 64 * 1024)
            defer { server.stop() }
            #expect(result.failure?.code == .tooLarge)
            #expect(result.failure?.message.hasSuffix("sent more than the limit of 65536 bytes") == true)
            #expect(server.bytesStreamed < 64 << 20)
        }

        @Test func endsADrippingAnswerAtTheTimeout() async throws {
            let (result, _) = try await fetchPastTheDeadline(
                LoopbackHTTPServer.Response.drip(),
                timeout: .milliseconds(250)
            )
            #expect(result.failure?.code == .networkError)
            #expect(result.failure?.message.hasSuffix("did not answer in full within 0.25 seconds") == true)
        }

        @Test func saysByHowMuchADeclaredLengthExceedsTheLimit() async throws {
            let (result, server) = try await fetch(.container([UInt8](repeating: 32, count: 150)), maximumBytes: 100)
            defer { server.stop() }
            #expect(result.failure?.message.hasSuffix("declares 150 bytes, more than the limit of 100 bytes") == true)
        }

        @Test func neverFollowsARedirect() async throws {
            let (result, server) = try await fetch(.redirect("http://example.com/r?id=GTM-K1T5"))
            defer { server.stop() }
            #expect(result.failure?.status == 302)
            #expect(server.requests.count == 1)
        }

        @Test func fillsAURLTemplate() async throws {
            let server = try LoopbackHTTPServer { _ in .container(Fixtures.live()) }
            defer { server.stop() }
            let source = try HTTPContainerSource(template: "\(server.baseURL.absoluteString)/containers/{id}.json?v=2")
            _ = try await source.fetch(id: Fixtures.containerID, ifNoneMatch: nil)
            #expect(server.requests.first.map { "\($0.path)?\($0.query)" } == "/containers/GTM-K1T5.json?v=2")
        }

        @Test func refusesAnIDThatBreaksThePatternWithoutARequest() async throws {
            let server = try LoopbackHTTPServer { _ in .container(Fixtures.live()) }
            defer { server.stop() }
            let source = try HTTPContainerSource(base: server.baseURL)
            for id in ["../etc/passwd", "GTM-abc", "GTM-X&gtm_auth=1", ""] {
                await #expect(
                    throws: ContainerFetchError(.invalidContainerID, "'\(id)' is not a container id (GTM-XXXX)")
                ) {
                    try await source.fetch(id: id, ifNoneMatch: nil)
                }
            }
            #expect(server.requests.isEmpty)
        }

        @Test(arguments: ["ftp://example.com", "file:///tmp", "http://", "https://example.com/?q=1"])
        func refusesABaseURLThatIsNotPlainHTTP(base: String) throws {
            #expect(throws: ContainerFetchError.self) { try HTTPContainerSource(base: URL(string: base)!) }
        }

        @Test func fetchesADraftWithTheTokenButNeverShowsIt() async throws {
            let server = try LoopbackHTTPServer { _ in .status(403) }
            defer { server.stop() }
            let source = try HTTPContainerSource(base: server.baseURL)
            let request = PreviewRequest(
                containerID: Fixtures.containerID,
                authToken: "s3cret-TOKEN",
                previewNumber: "7"
            )
            do throws(ContainerFetchError) {
                _ = try await source.fetchDraft(request)
                Issue.record("a 403 must fail")
            } catch {
                #expect(error.isRefusal)
                #expect(!error.message.contains("s3cret"))
                #expect(error.message.contains("gtm_auth=<redacted>"))
            }
            let sent = try #require(server.requests.first)
            #expect(sent.queryNames == ["id", "gtm_auth", "gtm_preview"])
            #expect(sent.query("gtm_auth") == "s3cret-TOKEN")
            #expect(sent.query("gtm_preview") == "7")
        }
    }
}

extension Result {
    /// The error of a failure.
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
