import ContainerKit
import ContainerKitTesting
import Foundation
import TestSupport
import Testing

extension LifecycleTests {
    @Suite struct ContainerCallbackTests {
        let id = Fixtures.containerID
        let clock = ManualClock()
        let runner = Runner()

        func open(_ network: (any ContainerSource)?, saved: SavedContainerStore?) async throws -> CallbackRecorder {
            let callbacks = CallbackRecorder()
            let manager = await runner.run(
                TagManager(
                    logger: InMemoryLogger(),
                    lifecycle: .testing(savedContainers: saved, network: network, clock: clock)
                )
            )
            _ = try await manager.open(id: id, timeout: .seconds(3600), callback: callbacks)
            return callbacks
        }

        @Test func reportsTheSavedAndTheNetworkRefreshInOrder() async throws {
            let callbacks = try await open(
                ScriptedSource([ScriptedSource.container("1")]),
                saved: SavedContainerStore(directory: temporaryDirectory())
            )
            #expect(
                callbacks.events == [
                    .began(.saved), .failed(.saved, .noSavedContainer), .began(.network), .succeeded(.network),
                ]
            )
        }

        @Test func reportsASavedContainerThatLoads() async throws {
            let store = SavedContainerStore(directory: temporaryDirectory())
            try await store.save(id: id, bytes: Fixtures.live(), etag: nil, fetchedAt: clock.wallNow)
            let callbacks = try await open(nil, saved: store)
            #expect(callbacks.events == [.began(.saved), .succeeded(.saved)])
        }

        @Test func reportsAnUnreadableSavedContainerAsAnIOError() async throws {
            let directory = temporaryDirectory()
            try FileManager.default.createDirectory(
                atPath: directory + "/\(id).json",
                withIntermediateDirectories: true
            )
            let callbacks = try await open(nil, saved: SavedContainerStore(directory: directory))
            #expect(callbacks.events == [.began(.saved), .failed(.saved, .ioError)])
        }

        @Test func reportsACorruptSavedContainerAsAnIOError() async throws {
            let directory = try Fixtures.directory(["\(id).json": Array("{\"resource\": ".utf8)])
            let callbacks = try await open(nil, saved: SavedContainerStore(directory: directory))
            #expect(callbacks.events == [.began(.saved), .failed(.saved, .ioError)])
        }

        static let serverFailures: [(String, LoopbackHTTPServer.Response, RefreshFailure)] = [
            ("404", .status(404), .serverError),
            ("403", .status(403), .serverError),
            ("500", .status(500, body: Array("oops".utf8)), .serverError),
            ("503", .status(503), .serverError),
            ("unparsable body", .container(Array("<html>not a container</html>".utf8)), .serverError),
            ("empty body", .container([]), .serverError),
            ("garbage", .garbage(Array("\u{0}\u{1}\u{2} garbage\r\n\r\n".utf8)), .serverError),
            (
                "truncated body", .truncated(Array(Fixtures.live().prefix(50)), declaredLength: Fixtures.live().count),
                .networkError
            ),
            ("slow answer", .hang, .networkError),
        ]

        @Test(arguments: serverFailures)
        func mapsServerAnswersToRefreshFailures(
            _ name: String,
            response: LoopbackHTTPServer.Response,
            failure: RefreshFailure
        ) async throws {
            let server = try LoopbackHTTPServer { _ in response }
            defer { server.stop() }
            // The source's timeout runs on a clock of its own, passed only where it is what ends the request.
            let deadlines = ManualClock()
            let source = try HTTPContainerSource(base: server.baseURL, timeout: .seconds(1), clock: deadlines)
            async let opened = open(source, saved: nil)
            if response.fault == .hang {
                await server.waitForRequests(1)
                await deadlines.waitForSleepers(1)
                deadlines.advance(by: .seconds(1))
            }
            let callbacks = try await opened
            #expect(callbacks.events == [.began(.network), .failed(.network, failure)], "\(name)")
        }

        @Test func mapsARefusedConnectionToNoNetwork() async throws {
            let refusing = try RefusingPort()
            defer { refusing.close() }
            let callbacks = try await open(try HTTPContainerSource(base: refusing.baseURL), saved: nil)
            #expect(callbacks.events == [.began(.network), .failed(.network, .noNetwork)])
        }

        @Test func mapsAnUnknownSourceErrorToUnknownError() async throws {
            let callbacks = try await open(ScriptedSource([ScriptedSource.failure(.unknown)]), saved: nil)
            #expect(callbacks.events == [.began(.network), .failed(.network, .unknownError)])
        }

        @Test(arguments: [
            (ContainerFetchError.Code.noNetwork, RefreshFailure.noNetwork),
            (.networkError, .networkError), (.httpStatus, .serverError), (.badResponse, .serverError),
            (.tooLarge, .serverError), (.notFound, .serverError), (.invalidContainer, .serverError),
            (.io, .ioError), (.unknown, .unknownError), (.notConfigured, .unknownError),
        ])
        func everyFetchErrorCodeMapsToARefreshFailure(code: ContainerFetchError.Code, failure: RefreshFailure) {
            #expect(ContainerFetchError(code, "x").refreshFailure == failure)
        }

        @Test func closureCallbackReceivesTheContainerID() async throws {
            let seen = CallbackRecorder()
            let callback = ClosureContainerCallback { containerID, event in
                #expect(containerID == "GTM-K1T5")
                seen.containerRefresh(containerID, event)
            }
            let manager = TagManager(
                logger: InMemoryLogger(),
                lifecycle: .testing(
                    network: ScriptedSource([ScriptedSource.container("1")]),
                    clock: clock
                )
            )
            _ = try await manager.open(id: id, callback: callback)
            #expect(seen.events == [.began(.network), .succeeded(.network)])
            #expect(seen.events.map(\.description) == ["began network", "succeeded network"])
        }
    }
}
