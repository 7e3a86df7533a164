import ContainerKit

/// The rule catalog as text (`containerkit lint --list-rules`) and as the Markdown of `Docs/LintRules.md`
/// (`containerkit lint --list-rules --format markdown`).
public enum LintRuleCatalog {
    /// One line per rule: id, default severity, opt-in marker and description, in aligned columns.
    public static func text(_ rules: [RuleDescription] = Linter.builtInRules.map { $0.description }) -> String {
        let idWidth = rules.map(\.id.count).max() ?? 0
        return rules.map { rule in
            let id = rule.id.padding(toLength: idWidth)
            let severity = rule.severity.rawValue.padding(toLength: 7)
            let optIn = rule.isOptIn ? "opt-in " : "       "
            return "\(id)  \(severity)  \(optIn) \(rule.description)"
        }.joined(separator: "\n")
    }

    /// The Markdown document listing every rule with its severity, description and examples.
    public static func markdown(_ rules: [RuleDescription] = Linter.builtInRules.map { $0.description }) -> String {
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
        out += gtmSection
        out += configurationSection
        return out
    }

    /// What GTM does where a rule depends on it, and where ContainerKit's reading comes from.
    static let gtmSection = """

        ## What GTM does, and where the rules get it

        The rules judge a container by what GTM itself does with it (see `Docs/Evaluation.md`, "Where the
        semantics come from", for the runtime side):

        - `file_name_container_id`: the runtime's id comes from the file name (`GTM-XXXX.json`), the content
          (an export's `publicId`), the id a served `gtm.js` names for itself (`ctid:"GTM-…"` or `containerId`),
          then a `GTM-XXXX` token in the file name that neither follows nor precedes a lower-case letter
          (`wGTM-TAG-export.json` names none).
        - `unknown_format`: a document refused by name (a server-side export, an export 1.x, an AMP
          configuration) gets only its refusal: no rule reports on the contents of a container nothing runs.
        - `unused_variable`: GTM's built-in variables are not reported (export `builtInVariable`s, their compiled
          codes, suggested Firebase parameters, gtm.js built-ins such as `gtm.*` reads, `__aev`, `__dbg`); the
          first-party cookie variable (`__k`) is a user-defined variable in GTM, so an unused one is reported. Only
          *named* constants are skipped by default (an app may read them through typed getters); an unnamed
          constant of a compiled container is reported.
        - `non_numeric_comparison`: in web containers GTM compares with JavaScript's `Number()` (`""`, `null`,
          `[]` are 0, `true` is 1), so only a constant that converts to `NaN` is reported; mobile SDKs need a
          number or a numeric string.
        - `consent_implicit_default`: ContainerKit evaluates consent as GTM's web runtime does (a tag whose
          consent settings are `NEEDED` runs only when the session's consent commands grant its types); what it
          does not apply is the implicit default a served `gtm.js` carries for the visitor's location, so a type
          no command set counts as granted (see `Docs/Evaluation.md`, "Consent").
        - Constant lookup tables are folded as GTM reads them: a repeated key takes its last row in web
          containers (gtm.js fills an object row by row), its first in mobile ones.

        """

    /// How `.containerkit-lint.json` works, appended to the Markdown catalog.
    static let configurationSection = """

        ## Configuration

        `containerkit lint` looks for `.containerkit-lint.json` in each file's directory and then in every directory
        above it; the nearest one applies. `--config <file>` uses one file for everything instead.

        ```json
        {
          "disabled_rules": ["unused_variable"],
          "opt_in_rules": ["paused_tag"],
          "only_rules": [],
          "severity": {"unsupported_template": "note"},
          "braze_class_paths": ["com.appboy.googletagmanager.BrazeGtmTagProvider"],
          "excluded": ["legacy/**", "**/*.plist"],
          "max_file_size": 16777216,
          "report_unused_constants": false
        }
        ```

        | key | meaning |
        |---|---|
        | `disabled_rules` | rules that do not run |
        | `opt_in_rules` | opt-in rules that run |
        | `only_rules` | when not empty, exactly these rules run and the two lists above are ignored |
        | `severity` | `error`, `warning` or `note` per rule id, replacing the default |
        | `braze_class_paths` | Function Call class paths checked by the Braze rules (default: \
        `com.appboy.googletagmanager.BrazeGtmTagProvider`, `BrazeGTMTagManager`, \
        `com.braze.googletagmanager.BrazeGtmTagProvider`) |
        | `excluded` | globs, relative to the configuration file, of files and folders that directory walks skip \
        (`*` within a folder, `**` across folders); files named on the command line are always linted |
        | `max_file_size` | files larger than this many bytes get `file_too_large` and are not read (16 MiB) |
        | `report_unused_constants` | `unused_variable` also reports named constants, which apps may read through \
        typed getters (off) |

        Unknown keys and rule ids are reported on standard error and otherwise ignored; a key of the wrong type
        stops the run with exit code 1.

        Exit codes: 0 when no finding is an error (warnings and notes allowed), 2 when at least one is (`--strict`
        makes warnings errors), 1 when a path could not be read or a configuration is invalid, 64 for usage errors.

        """

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
