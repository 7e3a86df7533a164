import ContainerKitBrazeLint
import Foundation
import Testing

@testable import ContainerKit
@testable import ContainerKitLint

struct LintRuleCatalogTests {
    private static let docsPath = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Docs/LintRules.md").path

    /// Fails when `Docs/LintRules.md` and the rules drift apart. Regenerate with
    /// `swift run containerkit lint --list-rules --format markdown > Docs/LintRules.md`.
    @Test func docsListEveryRuleExactlyAsTheCodeDoes() throws {
        let onDisk = try String(contentsOfFile: Self.docsPath, encoding: .utf8)
        #expect(
            onDisk == LintRuleCatalog.markdown(Linter.allRules.map { $0.description }),
            "Docs/LintRules.md is out of date: regenerate it with containerkit lint --list-rules --format markdown"
        )
    }

    @Test func textCatalogHasOneLinePerRule() {
        let lines = LintRuleCatalog.text(Linter.allRules.map { $0.description }).split(separator: "\n")
        #expect(lines.count == Linter.allRules.count)
        #expect(lines.contains { $0.hasPrefix("paused_tag") && $0.contains("opt-in") })
    }

    @Test func markdownPrintsControlCharactersVisibly() {
        #expect(LintRuleCatalog.printable("a\u{08}b\nc") == "a\\u{8}b\nc")
    }
}
