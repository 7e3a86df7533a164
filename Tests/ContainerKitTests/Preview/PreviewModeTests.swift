import ContainerKit
import ContainerKitTesting
import Foundation
import TestSupport
import Testing

extension PreviewTests {
    @Suite struct PreviewModeTests {
        let id = Fixtures.containerID
        let token = "s3cret-Token_1"
        let logger = InMemoryLogger(minimumLevel: .verbose)
        let runner = Runner()

        var enterURL: String { "tagmanager.c.com.example://preview/p?id=\(id)&gtm_auth=\(token)&gtm_preview=7" }
        var exitURL: String { "tagmanager.c.com.example://preview/p?id=\(id)&gtm_preview=" }

        func manager(preview: (any PreviewSource)?, network: (any ContainerSource)? = nil) async throws -> TagManager {
            let manager = await runner.run(
                TagManager(
                    logger: logger,
                    lifecycle: .testing(network: network, preview: preview, clock: ManualClock())
                )
            )
            manager.add(try ContainerLoader().load(bytes: Fixtures.live(), file: "\(id).json"))
            return manager
        }

        func drafts() throws -> DirectoryContainerSource {
            DirectoryContainerSource(
                directory: try Fixtures.directory([
                    "\(id).json": Fixtures.draft(), "GTM-OTHER1.json": Fixtures.draft(version: "8"),
                ])
            )
        }

        func expectNoToken() {
            for entry in logger.entries {
                #expect(!entry.message.contains(token), "\(entry.message)")
                #expect(!entry.metadata.values.contains { $0.contains(token) }, "\(entry.metadata)")
            }
        }

        @Test func enteringPreviewMakesTheDraftLiveAndTheExitURLRestoresTheLiveVersion() async throws {
            let server = try LoopbackHTTPServer { request in
                request.query("gtm_auth") == "s3cret-Token_1" && request.query("gtm_preview") == "7"
                    ? .container(Fixtures.draft()) : .status(403)
            }
            defer { server.stop() }
            let manager = try await manager(preview: try HTTPContainerSource(base: server.baseURL))
            #expect(manager.preview(url: enterURL))
            await logger.waitForEntry { [id] in $0.message == "previewing a draft" && $0.metadata["container"] == id }
            #expect(manager.liveVersion() == "7")
            #expect(manager.previewContainerID == id)
            #expect(!manager.isDebugMode)
            #expect(server.requests.map(\.path) == ["/r"])
            #expect(server.requests.first?.queryNames == ["id", "gtm_auth", "gtm_preview"])

            #expect(manager.preview(url: exitURL))
            #expect(manager.liveVersion() == "1")
            #expect(manager.previewContainerID == nil)
            #expect(!manager.preview(url: exitURL))
            expectNoToken()
        }

        @Test func aRefusedTokenKeepsTheLiveVersionAndIsLoggedWithoutTheToken() async throws {
            let server = try LoopbackHTTPServer { _ in .status(403) }
            defer { server.stop() }
            let manager = try await manager(preview: try HTTPContainerSource(base: server.baseURL))
            let request = PreviewRequest(containerID: id, authToken: token, previewNumber: "7")
            await #expect(throws: ContainerFetchError.self) {
                do throws(ContainerFetchError) {
                    try await manager.enterPreview(request)
                } catch {
                    #expect(error.isRefusal)
                    throw error
                }
            }
            #expect(manager.preview(url: enterURL))
            await logger.waitForMessage(at: .error, containing: "cannot preview")
            #expect(manager.liveVersion() == "1")
            #expect(manager.previewContainerID == nil)
            expectNoToken()
        }

        @Test func aMalformedURLIsRejectedWithAWarning() async throws {
            let manager = try await manager(preview: try drafts())
            #expect(!manager.preview(url: "tagmanager.c.app://preview/p?id=\(id)&gtm_auth=\(token)&gtm_preview=x"))
            #expect(logger.messages(at: .warning).first?.hasPrefix("invalid preview url") == true)
            #expect(!manager.preview(url: URL(string: "https://example.com/preview/p")!))
            #expect(manager.liveVersion() == "1")
            expectNoToken()
        }

        @Test func theExitURLOfAContainerNotInPreviewIsRejected() async throws {
            let manager = try await manager(preview: try drafts())
            #expect(!manager.preview(url: exitURL))
            #expect(logger.messages(at: .warning).contains { $0.contains("is not in preview") })
            try await manager.enterPreview(PreviewRequest(containerID: id, authToken: token, previewNumber: "7"))
            #expect(!manager.preview(url: "tagmanager.c.com.example://preview/p?id=GTM-OTHER1&gtm_preview="))
            #expect(manager.liveVersion() == "7")
        }

        @Test func withoutAPreviewSourceThePreviewURLIsRejected() async throws {
            let manager = try await manager(preview: nil)
            #expect(!manager.preview(url: enterURL))
            #expect(logger.messages(at: .warning).contains { $0.contains("no preview source is configured") })
        }

        @Test func aDraftThatDoesNotLoadIsReported() async throws {
            let directory = try Fixtures.directory(["\(id).json": Array("{\"resource\": [".utf8)])
            let manager = try await manager(preview: DirectoryContainerSource(directory: directory))
            await #expect(throws: ContainerFetchError.self) {
                do throws(ContainerFetchError) {
                    try await manager.enterPreview(
                        PreviewRequest(containerID: id, authToken: token, previewNumber: "1")
                    )
                } catch {
                    #expect(error.code == .invalidContainer)
                    throw error
                }
            }
            #expect(manager.liveVersion() == "1")
        }

        @Test func debugModeRecordsATraceForEveryEvent() async throws {
            let manager = try await manager(preview: try drafts())
            #expect(manager.preview(url: enterURL + "&gtm_debug=x"))
            await logger.waitForEntry { [id] in $0.message == "previewing a draft" && $0.metadata["container"] == id }
            #expect(manager.liveVersion() == "7" && manager.isDebugMode)
            let session = manager.makeDataLayer()
            #expect(session.debug)

            let played = await session.push(event: "played", parameters: ["song": "So What", "genre": "rock"])
            let trace = try #require(played.trace)
            #expect(trace.tags.map(\.outcome) == [.fired, .notFired, .notFired])
            #expect(trace.tags[1].reason?.contains("{{Genre}}") == true)
            #expect(trace.tags[2].reason?.contains("{{Event Name}}") == true)
            #expect(trace.evaluations.first?.variables.contains { $0.name == "Song" && $0.value == "So What" } == true)
            #expect(trace.dataLayer.objectValue?["genre"] == "rock")

            let skipped = await session.push(event: "skipped", parameters: ["genre": "jazz"])
            let blocked = try #require(skipped.trace?.tags.last)
            #expect(blocked.outcome == .blocked)
            #expect(skipped.fired.isEmpty)

            #expect(manager.preview(url: exitURL))
            #expect(!manager.isDebugMode)
            #expect(!manager.makeDataLayer().debug)
        }

        @Test func previewingASecondContainerReturnsTheFirstToItsLiveVersion() async throws {
            let manager = try await manager(preview: try drafts())
            manager.add(try ContainerLoader().load(bytes: Fixtures.live(version: "5"), file: "GTM-OTHER1.json"))
            try await manager.enterPreview(PreviewRequest(containerID: id, authToken: token, previewNumber: "7"))
            try await manager.enterPreview(
                PreviewRequest(containerID: "GTM-OTHER1", authToken: token, previewNumber: "8")
            )
            #expect(manager.liveVersion() == "1")
            #expect(manager.liveVersion("GTM-OTHER1") == "8")
            #expect(manager.previewContainerID == "GTM-OTHER1")
            #expect(manager.exitPreview(id: "GTM-OTHER1"))
            #expect(manager.liveVersion("GTM-OTHER1") == "5")
        }

        @Test func exitingPreviewOfAContainerThatWasNotLiveRemovesIt() async throws {
            let manager = try await manager(preview: try drafts())
            try await manager.enterPreview(
                PreviewRequest(containerID: "GTM-OTHER1", authToken: token, previewNumber: "8")
            )
            #expect(manager.liveVersion("GTM-OTHER1") == "8")
            #expect(manager.exitPreview(id: "GTM-OTHER1"))
            #expect(manager.container(id: "GTM-OTHER1") == nil)
        }

        @Test func aRefreshDuringPreviewUpdatesTheVersionThatExitingRestores() async throws {
            let clock = ManualClock()
            let callbacks = CallbackRecorder()
            let manager = await runner.run(
                TagManager(
                    logger: logger,
                    lifecycle: .testing(
                        network: ScriptedSource([ScriptedSource.container("1"), ScriptedSource.container("2")]),
                        preview: try drafts(),
                        clock: clock
                    )
                )
            )
            _ = try await manager.open(id: id, callback: callbacks)
            try await manager.enterPreview(PreviewRequest(containerID: id, authToken: token, previewNumber: "7"))
            clock.advance(by: .seconds(15 * 60))
            let holder = try #require(manager.containerHolder(id: id))
            #expect(holder.refresh())
            await callbacks.waitFor(.succeeded(.network), count: 2)
            #expect(holder.opened.container?.version == "2")
            #expect(manager.liveVersion() == "7")
            #expect(manager.exitPreview(id: id))
            #expect(manager.liveVersion() == "2")
        }

        @Test func theDraftsDirectoryRefusesIDsThatWouldLeaveIt() async throws {
            let source = try drafts()
            for id in ["../GTM-K1T5", "GTM-K1T5/../../etc/passwd", "/etc/passwd"] {
                await #expect(throws: ContainerFetchError.self) {
                    try await source.fetchDraft(PreviewRequest(containerID: id, authToken: "t", previewNumber: "1"))
                }
            }
        }
    }
}
