import ContainerKit
import Foundation
import Testing

/// Keeps the README's embedding example honest: the code between the markers below must appear in
/// README.md verbatim (modulo indentation), and it compiles and runs here.
struct ReadmeExampleTests {
    @Test func embeddingExampleRunsAndFiresATag() async throws {
        // `swift test` runs in the package root, where the example's relative path resolves.
        let fired = try await readmeExample()
        #expect(fired == [1])
    }

    @Test func readmeShowsTheSameCode() throws {
        let source = try String(contentsOfFile: #filePath, encoding: .utf8)
        let readme = try String(
            contentsOfFile: TestContainers.packageRoot.appendingPathComponent("README.md").path,
            encoding: .utf8
        )
        let start = try #require(source.range(of: "// README:begin\n"))
        let end = try #require(source.range(of: "// README:end\n", range: start.upperBound..<source.endIndex))
        let example = source[start.upperBound..<end.lowerBound]
            .split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        let readmeLines = Set(readme.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
        for line in example {
            let present = readmeLines.contains(line)
            #expect(present, "README.md lacks the example line: \(line)")
        }
    }

    func readmeExample() async throws -> [Int?] {
        // README:begin
        let manager = TagManager()
        manager.register(
            tagHandler: ClosureTagHandler { call in
                print("tag \(call.tagID ?? 0) → \(call.name): \(call.arguments)")
            },
            for: "com.appboy.googletagmanager.BrazeGtmTagProvider"
        )
        manager.add(try await ContainerLoader().load(path: "Containers/GTM-MUSIC01.json"))

        // One data layer per end user; every session shares the one compiled container.
        let session = manager.makeDataLayer(context: ClientContext(platform: "Android", appID: "com.example.music"))
        let result = await session.push(
            event: "played song",
            parameters: ["title": "So What", "genre": "jazz", "duration": 545]
        )
        // README:end
        return result.fired.map(\.tagID)
    }
}
