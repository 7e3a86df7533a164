import ContainerKitBrazeLint
import Testing

@testable import ContainerKit
@testable import ContainerKitLint

/// Every rule's triggering and non-triggering examples are its tests.
struct LintRuleExampleTests {
    static let ruleIDs = Linter.allRules.map { $0.description.id }

    private func findings(of rule: any LintRule.Type, in example: LintExample) -> [LintFinding] {
        let linter = Linter(configuration: example.configuration ?? LintConfiguration(), rules: [rule])
        return linter.lint(bytes: Array(example.text.utf8), file: example.file)
    }

    @Test(arguments: ruleIDs)
    func triggeringExamplesProduceAFinding(id: String) throws {
        let rule = try #require(Linter.rule(id: id, in: Linter.allRules))
        #expect(!rule.description.triggeringExamples.isEmpty)
        for example in rule.description.triggeringExamples {
            let found = findings(of: rule, in: example)
            #expect(found.contains { $0.ruleID == id }, "no '\(id)' finding for \(example.file): \(example.text)")
            #expect(found.allSatisfy { $0.severity == rule.description.severity && !$0.message.isEmpty })
        }
    }

    @Test(arguments: ruleIDs)
    func nonTriggeringExamplesProduceNoFinding(id: String) throws {
        let rule = try #require(Linter.rule(id: id, in: Linter.allRules))
        #expect(!rule.description.nonTriggeringExamples.isEmpty)
        for example in rule.description.nonTriggeringExamples {
            let found = findings(of: rule, in: example)
            #expect(found.isEmpty, "unexpected \(found) for \(example.file): \(example.text)")
        }
    }

    @Test func ruleIDsAreUniqueSnakeCaseWithoutARuleSuffix() {
        #expect(Set(Self.ruleIDs).count == Self.ruleIDs.count)
        for id in Self.ruleIDs {
            #expect(id.allSatisfy { $0 == "_" || $0.isLowercase || $0.isNumber }, "'\(id)' is not snake_case")
            #expect(!id.hasSuffix("_rule"))
        }
    }

    @Test func descriptionsAreOneSentence() {
        for rule in Linter.allRules.map({ $0.description }) {
            #expect(rule.description.hasSuffix("."), "'\(rule.id)' description should end with a period")
            #expect(!rule.description.contains("\n"))
            #expect(rule.name.first?.isUppercase == true)
        }
    }
}
