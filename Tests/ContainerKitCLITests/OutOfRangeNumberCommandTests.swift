import ContainerKit
import ContainerKitCLI
import ContainerKitTesting
import Foundation
import TestSupport
import Testing

/// `"tag_id": 1e19` stopped `run`, `lint` and `preview` with an `Int(Double)` trap (exit 132); each now
/// reports the value's place and exits as it does for any container it cannot load.
struct OutOfRangeNumberCommandTests {
    static let container = Array(
        #"""
        {"resource": {"version": "1", "macros": [{"function": "__e"}],
          "tags": [{"function": "__funct", "tag_id": 1e19, "vtp_classPath": "A"}],
          "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "go"}],
          "rules": [[["if", 0], ["add", 0]]]}}
        """#.utf8
    )

    func run(_ arguments: [String]) async -> (code: Int32, out: String, err: String) {
        let captured = CapturedOutput()
        let code = await CLI.main(arguments, output: captured.output)
        return (code, captured.standardOutput, captured.standardError)
    }

    func files() throws -> String {
        try Fixtures.directory([
            "GTM-K1T5.json": Self.container, "events.jsonl": Array(#"{"event": "go"}"#.utf8),
        ])
    }

    @Test func runReportsTheValueAndItsPlace() async throws {
        let directory = try files()
        let outcome = await run(["run", directory + "/GTM-K1T5.json", "--events", directory + "/events.jsonl"])
        #expect(outcome.code == 1)
        #expect(outcome.err.contains("GTM-K1T5.json:2:46"), "\(outcome.err)")
        #expect(outcome.err.contains("'1e+19'") || outcome.err.contains("'10000000000000000000'"), "\(outcome.err)")
        #expect(outcome.err.contains("/resource/tags/0/tag_id"))
    }

    @Test func lintReportsTheValueAsAnError() async throws {
        let directory = try files()
        let outcome = await run(["lint", directory + "/GTM-K1T5.json", "--format", "json"])
        #expect(outcome.code == 2, "\(outcome.err)")
        #expect(outcome.out.contains("/resource/tags/0/tag_id"), "\(outcome.out)")
        #expect(outcome.out.contains("invalid_structure"), "\(outcome.out)")
    }

    @Test func previewReportsTheValueAndItsPlace() async throws {
        let directory = try files()
        let url = "tagmanager.c.com.example.app://preview/p?id=GTM-K1T5&gtm_auth=x&gtm_preview=7"
        let outcome = await run(["preview", url, "--drafts", directory, "--events", directory + "/events.jsonl"])
        #expect(outcome.code != 0)
        #expect(outcome.code != 132)
        #expect(outcome.err.contains("/resource/tags/0/tag_id"), "\(outcome.err)")
    }
}
