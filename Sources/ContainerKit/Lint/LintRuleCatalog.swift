/// The rule catalog as text (`containerkit lint --list-rules`) and as the Markdown of `Docs/LintRules.md`
/// (`containerkit lint --list-rules --format markdown`).
public enum LintRuleCatalog {
    /// One line per rule: id, default severity, opt-in marker and description, in aligned columns.
    public static func text(_ rules: [RuleDescription] = Linter.allRules.map { $0.description }) -> String {
        let idWidth = rules.map(\.id.count).max() ?? 0
        return rules.map { rule in
            let id = rule.id.padding(toLength: idWidth)
            let severity = rule.severity.rawValue.padding(toLength: 7)
            let optIn = rule.isOptIn ? "opt-in " : "       "
            return "\(id)  \(severity)  \(optIn) \(rule.description)"
        }.joined(separator: "\n")
    }

    /// The Markdown document listing every rule with its severity, description and examples.
    public static func markdown(_ rules: [RuleDescription] = Linter.allRules.map { $0.description }) -> String {
        var out = """
            # Lint rules

            <!-- Generated from the code; do not edit. Regenerate with:
                 swift run containerkit lint --list-rules --format markdown > Docs/LintRules.md
                 A test fails when this file and the rules drift apart. -->

            `containerkit lint` checks container files with the \(rules.count) rules below. Rules marked opt-in run
            only when listed in `opt_in_rules` of `.containerkit-lint.json`; any rule can be switched off with
            `disabled_rules` or given another severity with `severity`.

            | id | severity | opt-in | description |
            |---|---|---|---|

            """
        for rule in rules {
            out +=
                "| [`\(rule.id)`](#\(rule.id)) | \(rule.severity) | \(rule.isOptIn ? "yes" : "no") | "
                + "\(rule.description) |\n"
        }
        for rule in rules {
            out += "\n## `\(rule.id)`\n\n"
            out += "**\(rule.name)** (\(rule.severity)\(rule.isOptIn ? ", opt-in" : "")). \(rule.description)\n"
            if let example = rule.triggeringExamples.first {
                out += "\nTriggers, as `\(example.file)`:\n\n```json\n\(printable(example.text))\n```\n"
            }
            if let example = rule.nonTriggeringExamples.first {
                out += "\nDoes not trigger, as `\(example.file)`:\n\n```json\n\(printable(example.text))\n```\n"
            }
        }
        return out
    }

    /// The text with control characters other than newline and tab shown as `\u{…}`.
    static func printable(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 && scalar != "\n" && scalar != "\t" {
                out += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

extension String {
    /// The string padded with spaces to `length` characters (never cut).
    fileprivate func padding(toLength length: Int) -> String {
        count >= length ? self : self + String(repeating: " ", count: length - count)
    }
}
