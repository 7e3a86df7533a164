import ContainerKitTesting
import Testing

@testable import ContainerKit

/// GTM (JavaScript) compares strings by code units; Swift's `String ==` by Unicode canonical equivalence.
/// Keys, values and predicate operands must be compared the JavaScript way: `"caf\u{E9}"` (precomposed é)
/// and `"cafe\u{301}"` (e + combining acute) are two strings, and so are the Kelvin sign and `K`.
struct ByteExactStringTests {
    static let composed = "caf\u{E9}"
    static let decomposed = "cafe\u{301}"

    @Test(arguments: [2, 40])
    func canonicallyEquivalentKeysAreTwoEntriesOfAValueMap(filler: Int) {
        var map = ValueMap()
        // Past a dozen entries the map keeps a hash index: the same answer from both lookups.
        for i in 0..<filler { map["k\(i)"] = .int(Int64(i)) }
        map[Self.composed] = 1
        #expect(map[Self.decomposed] == nil)
        map[Self.decomposed] = 2
        #expect(map.count == filler + 2)
        #expect(map[Self.composed] == 1)
        #expect(map[Self.decomposed] == 2)
        map[Self.composed] = nil
        #expect(map[Self.decomposed] == 2)
        #expect(map[Self.composed] == nil)
    }

    @Test func canonicallyEquivalentStringsAreDifferentValues() {
        #expect(Value.string(Self.composed) != Value.string(Self.decomposed))
        #expect(Value.string("\u{212A}") != Value.string("K"))
        #expect(Value.string(Self.composed) == Value.string("caf" + "\u{E9}"))
        let a: Value = [Self.composed: 1]
        let b: Value = [Self.decomposed: 1]
        #expect(a != b)
        #expect(a == [Self.composed: 1])
    }

    @Test func byteComparisonAgreesWithTheBytesForEveryKindOfString() {
        // Small strings (up to 15 bytes, held in the value) are compared by their bits: each pair of this list,
        // made in different ways and of lengths around 15, must compare as its UTF-8 bytes do.
        let large = String(repeating: "k", count: 24)
        var strings = ["", "a", "b", "ab", "ba", "eventName", "boolParam", "exactly15bytes!", "exactly15bytes?"]
        strings += ["sixteen bytes!!!", "sixteen bytes!!?", Self.composed, Self.decomposed, "\u{212A}", "K"]
        strings += [
            String(decoding: Array("eventName".utf8), as: UTF8.self), "event" + "Name", "\("event")Name",
            String(large.prefix(3)), String(large.prefix(15)), String(large.prefix(16)), large,
            String("xxboolParam".dropFirst(2)), String("caf\u{E9}!".dropLast()),
        ]
        for a in strings {
            for b in strings {
                #expect(
                    a.hasSameBytes(as: b) == Array(a.utf8).elementsEqual(b.utf8),
                    "\(a.debugDescription) vs \(b.debugDescription)"
                )
            }
        }
    }

    @Test func aSessionKeepsCanonicallyEquivalentKeysApart() {
        let manager = TagManager(logger: InMemoryLogger())
        let session = manager.makeDataLayer()
        session.push([Self.composed: 1])
        session.push([Self.decomposed: 2])
        #expect(session.model.count == 2)
        #expect(session.get(Self.composed) == 1)
        #expect(session.get(Self.decomposed) == 2)
        session.setAttribute("a", forKey: Self.composed)
        #expect(session.attribute(Self.decomposed) == nil)
    }

    @Test func versionOneVariablesReadTheByteExactKey() throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(
            try TestContainers.resource(
                macros: #"[{"function": "__v", "instance_name": "v1", "vtp_name": "\#(Self.composed)"}]"#
            )
        )
        let session = manager.makeDataLayer()
        session.push([Self.decomposed: 2])
        #expect(session.rawValue(forKey: Self.composed) == .undefined)
        #expect(session.value(forKey: "v1") == .undefined)
        session.push([Self.composed: 1])
        #expect(session.rawValue(forKey: Self.composed) == 1)
        #expect(session.rawValue(forKey: Self.decomposed) == 2)
    }

    /// A container whose one tag fires when the event name equals (`_eq`) `name`, and one whose tag fires
    /// for every event unless the name equals `name`.
    static func equalsContainer(_ name: String) throws -> Container {
        try TestContainers.resource(
            macros: #"[{"function": "__e"}]"#,
            tags: """
                [{"function": "__funct", "tag_id": 1, "vtp_classPath": "com.example.If"},
                 {"function": "__funct", "tag_id": 2, "vtp_classPath": "com.example.Unless"}]
                """,
            predicates: """
                [{"function": "_eq", "arg0": ["macro", 0], "arg1": "\(name)"},
                 {"function": "_re", "arg0": ["macro", 0], "arg1": ".*"}]
                """,
            rules: #"[[["if", 0], ["add", 0]], [["if", 1], ["unless", 0], ["add", 1]]]"#
        )
    }

    @Test(arguments: [(composed, decomposed), ("K", "\u{212A}"), (decomposed, composed)])
    func equalsPredicatesCompareCodeUnits(name: String, equivalent: String) throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try Self.equalsContainer(name))
        manager.register(tagHandler: ClosureTagHandler { _ in }, for: "com.example.If")
        manager.register(tagHandler: ClosureTagHandler { _ in }, for: "com.example.Unless")
        let session = manager.makeDataLayer()
        // The same name twice, in both orders, so that a cache of either name cannot answer for the other.
        for _ in 0..<2 {
            #expect(session.push(event: name).fired.map(\.classPath) == ["com.example.If"])
            #expect(session.push(event: equivalent).fired.map(\.classPath) == ["com.example.Unless"])
        }
    }

    @Test func lookupTablesMatchTheByteExactKey() throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(
            try TestContainers.resource(
                macros: """
                    [{"function": "__v", "vtp_name": "plan", "vtp_dataLayerVersion": 2},
                     {"function": "__smm", "instance_name": "lookup", "vtp_input": ["macro", 0],
                      "vtp_setDefaultValue": true, "vtp_defaultValue": "other",
                      "vtp_map": ["list", ["map", "key", "\(Self.composed)", "value", 1]]}]
                    """
            )
        )
        let session = manager.makeDataLayer()
        session.push(["plan": .string(Self.decomposed)])
        #expect(session.string(forKey: "lookup") == "other")
        session.push(["plan": .string(Self.composed)])
        #expect(session.value(forKey: "lookup") == 1)
    }
}
