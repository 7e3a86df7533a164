import ContainerKit
import ContainerKitTesting
import Testing

extension Fidelity {
    /// gtm.js's escape codes (`case "escape"`: `String(d)`, then each code's function): 7 escapes for a JavaScript
    /// string, 8 makes a string literal, 12 encodes a URI component (and `'()`), 16 leaves the value. Expected
    /// values are what served gtm.js 1331's functions (`Ld[7]`, `Ld[8]`, `Ld[12]`, `Ld[16]`) give under node.
    @Suite struct EscapeCodeTests {
        @Test(arguments: [
            (Value.string(#"a"b<c"#), [8, 16], #"'a\x22b\x3cc'"#),
            (.string("x='1' & y</script>\n\t\\"), [7], #"x\x3d\x271\x27 \x26 y\x3c\/script\x3e\n\t\\"#),
            (.undefined, [8, 16], "'undefined'"),
            (.int(5), [8, 16], "'5'"),
            (.null, [7], "null"),
            (.string("ünï €/?&=(x)'*~!"), [12], "%C3%BCn%C3%AF%20%E2%82%AC%2F%3F%26%3D%28x%29%27*~!"),
            (.bool(true), [16], "true"),
            (.string("a\u{2028}b\u{85}"), [7], #"a\u2028b\x85"#),
        ])
        func anEscapedValueIsWhatGtmJsMakesOfIt(value: Value, codes: [Int], expected: String) throws {
            let codeList = codes.map(String.init).joined(separator: ", ")
            let container = try TestContainers.resource(
                macros: #"[{"function": "__e"}, {"function": "__v", "vtp_name": "v", "vtp_dataLayerVersion": 2}]"#,
                tags: #"[{"function": "__funct", "tag_id": 1, "vtp_classPath": "t", "vtp_functionArgument": "#
                    + #"["list", ["map", "key", "out", "value", ["escape", ["macro", 1], \#(codeList)]]]}]"#,
                predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"}]"#,
                rules: #"[[["if", 0], ["add", 0]]]"#
            )
            let manager = TagManager(logger: InMemoryLogger())
            manager.add(container)
            let session = manager.makeDataLayer()
            let fired = session.push(event: "e", parameters: value.isUndefined ? [:] : ["v": value]).fired
            #expect(fired.first?.parameters["out"] == .string(expected))
        }
    }
}
