import Testing

@testable import ContainerKit

/// Maps past a dozen keys keep a hash index beside their ordered arrays; these pin that the index answers
/// exactly what a linear search would, through growth, replacement and removal.
struct ValueMapTests {
    @Test(arguments: [5, 13, 40, 1_000])
    func everyKeyOfAMapIsFoundAndNoOtherIs(count: Int) {
        var map = ValueMap()
        for i in 0..<count { map["key\(i)"] = .int(Int64(i)) }
        #expect(map.count == count)
        for i in 0..<count { #expect(map["key\(i)"] == .int(Int64(i))) }
        #expect(map["key\(count)"] == nil)
        #expect(map["key"] == nil)
        #expect(map.keys == (0..<count).map { "key\($0)" })
    }

    @Test func replacingAndRemovingKeepTheIndexRight() {
        var map = ValueMap()
        for i in 0..<100 { map["k\(i)"] = .int(Int64(i)) }
        for i in stride(from: 0, to: 100, by: 2) { map["k\(i)"] = .string("even") }
        for i in stride(from: 1, to: 100, by: 4) { map["k\(i)"] = nil }
        #expect(map.count == 75)
        for i in 0..<100 {
            let expected: Value? = i % 2 == 0 ? .string("even") : (i % 4 == 1 ? nil : .int(Int64(i)))
            #expect(map["k\(i)"] == expected)
        }
        map["k1"] = 1
        #expect(map.keys.last == "k1")
        #expect(map["k1"] == 1)
    }

    @Test func indexedKeysAreComparedByTheirBytes() {
        var map = ValueMap()
        for i in 0..<20 { map["filler\(i)"] = .null }
        map["caf\u{E9}"] = 1
        map["cafe\u{301}"] = 2
        #expect(map["caf\u{E9}"] == 1)
        #expect(map["cafe\u{301}"] == 2)
        #expect(map.count == 22)
    }

    @Test func aLargeMapEqualsTheSameEntriesInAnotherOrder() {
        var forward = ValueMap()
        var backward = ValueMap()
        for i in 0..<50 { forward["k\(i)"] = .int(Int64(i)) }
        for i in (0..<50).reversed() { backward["k\(i)"] = .int(Int64(i)) }
        #expect(forward == backward)
        #expect(forward.hashValue == backward.hashValue)
    }

    @Test func settingWithAHintFindsTheKeyWhereverTheHintPoints() {
        var map: ValueMap = ["a": 1, "b": 2, "c": 3]
        var hint = 1
        map.setValue(20, forKey: "b", hint: &hint)  // the hint is right
        #expect(hint == 1)
        map.setValue(30, forKey: "c", hint: &hint)  // wrong: found by a search, and the hint follows
        #expect(hint == 2)
        hint = 99
        map.setValue(10, forKey: "a", hint: &hint)  // out of range
        #expect(hint == 0)
        hint = -1
        map.setValue(4, forKey: "d", hint: &hint)  // a new key is appended
        #expect(hint == 3)
        #expect(map.keys == ["a", "b", "c", "d"])
        #expect(map == ["a": 10, "b": 20, "c": 30, "d": 4])
    }
}
