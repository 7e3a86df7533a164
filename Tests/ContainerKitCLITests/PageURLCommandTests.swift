import ContainerKit
import ContainerKitTesting
import Foundation
import TestSupport
import Testing

@testable import ContainerKitCLI

/// `--context page_url=` gives a web session its page's address, which Page Hostname and Page Path read; a history
/// change moves it to its `gtm.newUrl`, as the page's `location` moves; without it, a decision that reads the page
/// says it was made with the value undefined.
struct PageURLCommandTests {
    /// A web container: `shop` fires on every event whose Page Path starts with `/shop`, `live` on `gtm.js` unless
    /// Page Hostname contains `staging`.
    static let container = Array(
        """
        {"resource": {"version": "1",
          "macros": [{"function": "__e"}, {"function": "__u", "vtp_component": "PATH", "instance_name": "Page Path"},
            {"function": "__u", "vtp_component": "HOST", "instance_name": "Page Hostname"}],
          "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "shop"},
                   {"function": "__funct", "tag_id": 2, "vtp_classPath": "live"}],
          "predicates": [{"function": "_sw", "arg0": ["macro", 1], "arg1": "/shop"},
                         {"function": "_eq", "arg0": ["macro", 0], "arg1": "gtm.js"},
                         {"function": "_cn", "arg0": ["macro", 2], "arg1": "staging"}],
          "rules": [[["if", 0], ["add", 0]], [["if", 1], ["unless", 2], ["add", 1]]]},
         "permissions": {}}
        """.utf8
    )

    /// A single-page app: the page loads at `/`, then the app moves to `/shop/shoes` and pushes a page view.
    static let dump = """
        [{"gtm.start":1,"event":"gtm.js"},{"event":"gtm.historyChange-v2","gtm.oldUrl":"https://www.example.com/","gtm.newUrl":"https://www.example.com/shop/shoes","gtm.historyChangeSource":"pushState"},{"event":"virtual_page_view"}]
        """

    func run(_ extra: [String]) async throws -> [ValueMap] {
        let directory = try Fixtures.directory(["GTM-WEBU1.json": Self.container, "dump.json": Array(Self.dump.utf8)])
        let captured = CapturedOutput()
        let arguments = [
            "run", directory + "/GTM-WEBU1.json", "--events", directory + "/dump.json", "--format", "json",
            "--log-level", "error",
        ]
        let code = await CLI.main(arguments + extra, output: captured.output)
        #expect(code == ExitCode.success, "\(captured.standardError)")
        return try captured.standardOutput.split(separator: "\n").map {
            try #require(try Value(json: String($0)).objectValue)
        }
    }

    static func fired(_ line: ValueMap) -> [String: [String]] {
        var fired: [String: [String]] = [:]
        for tag in (line["fired"]?.arrayValue ?? []).compactMap(\.objectValue) {
            fired[tag["class_path"]?.stringValue ?? ""] =
                tag["unknown_inputs"]?.arrayValue?.compactMap(\.stringValue) ?? []
        }
        return fired
    }

    @Test func thePagesURLDecidesItsConditionsAndFollowsAHistoryChange() async throws {
        let lines = try await run(["--context", "page_url=https://www.example.com/"])
        try #require(lines.count == 3)
        #expect(Self.fired(lines[0]) == ["live": []])  // decided: the host is known, and not staging
        #expect(Self.fired(lines[1]) == ["shop": []])  // the history change is the new page's first event
        #expect(Self.fired(lines[2]) == ["shop": []])

        let staging = try await run(["--context", "page_url=https://staging.example.com/"])
        #expect(Self.fired(staging[0]).isEmpty)
    }

    @Test func withoutItTheDecisionSaysThePageWasNotKnown() async throws {
        let lines = try await run([])
        try #require(lines.count == 3)
        #expect(Self.fired(lines[0]) == ["live": ["{{Page Hostname}}"]])
        // The history change gives the page's address from then on.
        #expect(Self.fired(lines[1]) == ["shop": []])
        #expect(Self.fired(lines[2]) == ["shop": []])
    }
}
