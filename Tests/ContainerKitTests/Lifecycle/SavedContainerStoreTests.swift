import ContainerKit
import ContainerKitTesting
import Foundation
import TestSupport
import Testing

extension LifecycleTests {
    @Suite struct SavedContainerStoreTests {
        let id = Fixtures.containerID
        let store = SavedContainerStore(directory: temporaryDirectory())
        let fetchedAt = Date(timeIntervalSince1970: 1_700_000_000.25)

        @Test func savesAndLoadsTheContainerWithItsFetchTimeAndEntityTag() async throws {
            try await store.save(id: id, bytes: Fixtures.live(), etag: "\"abc\"", fetchedAt: fetchedAt)
            let saved = try #require(try await store.load(id: id))
            #expect(saved == SavedContainer(bytes: Fixtures.live(), fetchedAt: fetchedAt, etag: "\"abc\""))
            let files = try FileManager.default.contentsOfDirectory(atPath: store.directory).sorted()
            #expect(files == ["\(id).json", "\(id).meta.json"])
        }

        /// The directory and its files are private to the service's user, as the README promises.
        @Test func theDirectoryAndFilesArePrivate() async throws {
            try await store.save(id: id, bytes: Fixtures.live(), etag: nil, fetchedAt: fetchedAt)
            func mode(_ path: String) throws -> Int? {
                try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            }
            #expect(try mode(store.directory) == 0o700)
            for name in try FileManager.default.contentsOfDirectory(atPath: store.directory) {
                #expect(try mode(store.directory + "/" + name) == 0o600, "\(name)")
            }
        }

        @Test func loadsNothingWhenNothingIsSaved() async throws {
            #expect(try await store.load(id: id) == nil)
        }

        @Test func aContainerFileTheMetadataDoesNotDescribeIsStale() async throws {
            try await store.save(id: id, bytes: Fixtures.live(), etag: "\"abc\"", fetchedAt: fetchedAt)
            try Data(Fixtures.live(version: "9")).write(to: URL(fileURLWithPath: "\(store.directory)/\(id).json"))
            let saved = try #require(try await store.load(id: id))
            #expect(saved.bytes == Fixtures.live(version: "9"))
            #expect(saved.fetchedAt == nil)
            #expect(saved.etag == nil)
        }

        @Test(arguments: [1e300, -1e300, 1e12])
        func aFetchTimeNoDurationCanHoldIsNotBelieved(seconds: Double) async throws {
            try await store.save(id: id, bytes: Fixtures.live(), etag: "\"abc\"", fetchedAt: fetchedAt)
            let path = "\(store.directory)/\(id).meta.json"
            let text = try String(contentsOfFile: path, encoding: .utf8)
            let edited = text.replacingOccurrences(of: "1700000000.25", with: String(seconds))
            #expect(edited != text)
            try edited.write(toFile: path, atomically: true, encoding: .utf8)
            let saved = try #require(try await store.load(id: id))
            #expect(saved.fetchedAt == nil)
        }

        @Test func savingAgainReplacesTheFilesAndLeavesNoTemporaryFiles() async throws {
            for version in 1...5 {
                try await store.save(
                    id: id,
                    bytes: Fixtures.live(version: String(version)),
                    etag: nil,
                    fetchedAt: fetchedAt.addingTimeInterval(Double(version))
                )
            }
            #expect(try await store.load(id: id)?.bytes == Fixtures.live(version: "5"))
            #expect(try await store.load(id: id)?.fetchedAt == fetchedAt.addingTimeInterval(5))
            #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory).count == 2)
        }

        @Test func aPropertyListIsSavedUnderItsOwnExtension() async throws {
            try await store.save(id: id, bytes: Fixtures.live(), etag: nil, fetchedAt: fetchedAt)
            let plist = Array("<?xml version=\"1.0\"?><plist version=\"1.0\"><dict/></plist>".utf8)
            try await store.save(id: id, bytes: plist, etag: nil, fetchedAt: fetchedAt)
            let files = try FileManager.default.contentsOfDirectory(atPath: store.directory).sorted()
            #expect(files == ["\(id).meta.json", "\(id).plist"])
            #expect(try await store.load(id: id)?.bytes == plist)
        }

        @Test func touchRecordsANewFetchTimeOnly() async throws {
            try await store.save(id: id, bytes: Fixtures.live(), etag: "\"abc\"", fetchedAt: fetchedAt)
            try await store.touch(id: id, fetchedAt: fetchedAt.addingTimeInterval(60))
            #expect(
                try await store.load(id: id)
                    == SavedContainer(
                        bytes: Fixtures.live(),
                        fetchedAt: fetchedAt.addingTimeInterval(60),
                        etag: "\"abc\""
                    )
            )
        }

        @Test func removeDeletesEveryFile() async throws {
            try await store.save(id: id, bytes: Fixtures.live(), etag: nil, fetchedAt: fetchedAt)
            try await store.remove(id: id)
            #expect(try await store.load(id: id) == nil)
            #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory).isEmpty)
        }

        @Test(arguments: ["../GTM-K1T5", "GTM-K1T5/../../x", "gtm-k1t5", ""])
        func refusesAnIDThatBreaksThePattern(id: String) async {
            await #expect(throws: ContainerFetchError.self) {
                try await store.save(id: id, bytes: Fixtures.live(), etag: nil, fetchedAt: fetchedAt)
            }
            await #expect(throws: ContainerFetchError.self) { try await store.load(id: id) }
        }

        @Test func reportsADirectoryItCannotCreateAsAnIOError() async throws {
            let file = try Fixtures.directory(["blocker": [1]]) + "/blocker"
            let store = SavedContainerStore(directory: file + "/containers")
            await #expect(throws: ContainerFetchError.self) {
                do throws(ContainerFetchError) {
                    try await store.save(id: id, bytes: Fixtures.live(), etag: nil, fetchedAt: fetchedAt)
                } catch {
                    #expect(error.code == .io)
                    throw error
                }
            }
        }
    }
}
