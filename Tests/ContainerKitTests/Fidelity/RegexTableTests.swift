import ContainerKit
import Testing

extension Fidelity {
    /// A regex table (`__remm`) as gtm.js runs it: each row's pattern is `new RegExp(fullMatch ? "^" + key + "$" :
    /// key, "g")` (`"gi"` with ignore case), the first row that matches `String(input)` gives its value, and with
    /// replace the value is `String(input).replace(pattern, value)`. The expected answers are node's for the same
    /// JavaScript.
    @Suite struct RegexTableTests {
        static let input = #", {"function": "__v", "vtp_name": "path", "vtp_dataLayerVersion": 2}"#

        /// A table reading `path` (macro 2) with one row `key` → `value`.
        static func table(_ key: String, _ value: String, fullMatch: Bool = false, replace: Bool = true) -> String {
            """
            {"function": "__remm", "vtp_input": ["macro", 2], "vtp_fullMatch": \(fullMatch),
              "vtp_replaceAfterMatch": \(replace), "vtp_ignoreCase": true, "vtp_setDefaultValue": true,
              "vtp_defaultValue": "none", "vtp_map": ["list", ["map", "key", \(key), "value", \(value)]]}
            """
        }

        func value(_ table: String, more: String = "", path: Value) throws -> Value? {
            let container = try Fidelity.resource(macro: table, more: Self.input + more, web: true)
            return Fidelity.arguments(container, before: [["path": path]])?["value"]
        }

        /// `"/en/shop/en/x".replace(/\/en\//gi, "/")` is `"/shop/x"`: every match is replaced, not the first.
        @Test func replacingReplacesEveryMatch() throws {
            #expect(try value(Self.table(#""/en/""#, #""/""#), path: "/en/shop/en/x") == "/shop/x")
            // Captures are expanded for each match.
            #expect(try value(Self.table(#""(\\d+)""#, #""<$1>""#), path: "a1b22c") == "a<1>b<22>c")
        }

        /// After an empty match the search moves on one character, so `.*` replaces the text and then the empty
        /// string at its end: `"abc".replace(/.*/g, "X")` is `"XX"`; `"ab".replace(/x*/g, "-")` is `"-a-b-"`.
        @Test func anEmptyMatchIsReplacedAndTheSearchMovesOn() throws {
            #expect(try value(Self.table(#"".*""#, #""X""#), path: "abc") == "XX")
            #expect(try value(Self.table(#""x*""#, #""-""#), path: "ab") == "-a-b-")
            #expect(try value(Self.table(#""^""#, #""-""#), path: "ab") == "-ab")
        }

        /// A pattern on the backtracking matcher (lookaround) makes at most 10,000 replacements: each search has a step
        /// budget of its own, and a long value must not cost millions of them.
        @Test func aBacktrackingPatternsReplacementsAreBounded() throws {
            let replaced = try value(
                Self.table(#""(?<=a)""#, #""-""#),
                path: .string(String(repeating: "a", count: 20_000))
            )
            let text = try #require(replaced?.stringValue)
            #expect(text.count(where: { $0 == "-" }) == 10_000)
            #expect(text.count(where: { $0 == "a" }) == 20_000)
        }

        /// Full match is `"^" + key + "$"`, not grouped: in `a|b` the anchors hold the first and last alternatives
        /// only, so a middle alternative matches anywhere (the corpus has such a row:
        /// `WordPress.Themes|WooCommerce.Themes|WordPress.Plugins|Elementor.Kits`).
        @Test func fullMatchAnchorsTheKeyAsWrittenNotGrouped() throws {
            let table = Self.table(#""A|B|C""#, #""hit""#, fullMatch: true, replace: false)
            #expect(try value(table, path: "xBx") == "hit")
            #expect(try value(table, path: "xA") == "none")
            #expect(try value(table, path: "Ax") == "hit")
            let replacing = Self.table(
                #""WordPress.Themes|WooCommerce.Themes|WordPress.Plugins|Elementor.Kits""#,
                #""WordPress""#,
                fullMatch: true
            )
            #expect(try value(replacing, path: "/en/shop/en/WooCommerce Themes/x") == "/en/shop/en/WordPress/x")
        }

        /// A key that reads a variable is that variable's value, as a pattern, at each event (it was compiled as an
        /// empty pattern, which matches everything).
        @Test func aKeyThatReadsAVariableIsItsValueAtEachEvent() throws {
            let table = Self.table(#"["macro", 3]"#, #""matched""#, fullMatch: true, replace: false)
            let pattern = #", {"function": "__v", "vtp_name": "pattern", "vtp_dataLayerVersion": 2}"#
            let container = try Fidelity.resource(macro: table, more: Self.input + pattern, web: true)
            let matching: ValueMap = ["path": "/en/shop", "pattern": "/en/.*"]
            #expect(Fidelity.arguments(container, before: [matching])?["value"] == "matched")
            let other: ValueMap = ["path": "/fr/shop", "pattern": "/en/.*"]
            #expect(Fidelity.arguments(container, before: [other])?["value"] == "none")
            // A value that is not a pattern matches nothing.
            let broken: ValueMap = ["path": "/en/shop", "pattern": "(unclosed"]
            #expect(Fidelity.arguments(container, before: [broken])?["value"] == "none")
        }

        /// `replace` takes its replacement as text: a number value gives the string of the replaced input.
        @Test func aReplacedValueIsText() throws {
            #expect(try value(Self.table(#""^.*$""#, "5"), path: "anything") == "5")
            #expect(try value(Self.table(#""^.*$""#, "5", replace: false), path: "anything") == 5)
        }
    }
}
