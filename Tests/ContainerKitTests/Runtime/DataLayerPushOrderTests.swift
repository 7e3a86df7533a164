import ContainerKit
import ContainerKitTesting
import Testing

/// GTM's web runtime applies a push key by key, in order — each key expanded on its dots and merged before
/// the next — and honours `_clear` (issue 24, point 1).
struct DataLayerPushOrderTests {
    let manager = TagManager(logger: InMemoryLogger())

    @Test func aKeyThatReplacesAMapDropsItsMembersBeforeALaterDottedKeySetsOne() {
        let layer = manager.makeDataLayer()
        layer.push(["cart": ["old": 1, "items": [1, 2]]])
        layer.push(["cart": "", "cart.fresh": 2])
        #expect(layer.get("cart") == ["fresh": 2])
    }

    @Test func aDottedKeyBeforeItsHeadIsOverwrittenByTheHead() {
        let layer = manager.makeDataLayer()
        layer.push(["cart.fresh": 2, "cart": "gone"])
        #expect(layer.get("cart") == "gone")
    }

    @Test func keysOfOnePushMergeInTheirOrder() {
        let layer = manager.makeDataLayer()
        layer.push(["a": ["x": 1]])
        layer.push(["a.y": 2, "a": ["z": 3], "a.x": 4])
        #expect(layer.model == ["a": ["x": 4, "y": 2, "z": 3]])
    }

    @Test func clearReplacesMapsAndArraysInsteadOfMergingThem() {
        let layer = manager.makeDataLayer()
        layer.push(["ecommerce": ["items": [["id": "a"], ["id": "b"]], "currency": "EUR"], "list": [1, 2, 3]])
        layer.push(["_clear": true, "ecommerce": ["items": [["name": "c"]]], "list": [9]])
        #expect(layer.get("ecommerce") == ["items": [["name": "c"]]])
        #expect(layer.get("list") == [9])
        #expect(layer.get("_clear") == .undefined)
    }

    @Test func clearOnADottedKeyReplacesOnlyItsLeaf() {
        let layer = manager.makeDataLayer()
        layer.push(["a": ["b": ["x": 1], "c": 1]])
        layer.push(["_clear": 1, "a.b": ["y": 2]])
        #expect(layer.model == ["a": ["b": ["y": 2], "c": 1]])
    }

    @Test(arguments: [Value.bool(false), 0, "", .null])
    func aFalsyClearMergesAndIsNotStored(_ clear: Value) {
        let layer = manager.makeDataLayer()
        layer.push(["a": ["x": 1]])
        layer.push(["_clear": clear, "a": ["y": 2]])
        #expect(layer.model == ["a": ["x": 1, "y": 2]])
    }

    @Test func aClearedKeyWhoseValueIsNotPresentIsRemoved() {
        let layer = manager.makeDataLayer()
        layer.push(["a": 1, "b": 2])
        layer.push(["_clear": true, "a": DataLayer.notPresent])
        #expect(layer.model == ["b": 2])
    }

    /// A push without dotted keys or `_clear` sets its scalars one key at a time (the fast path): the same
    /// outcome as merging, in a model large enough to be indexed.
    @Test func scalarsOverwriteNullOverwritesAndNotPresentLeavesAValueInALargeModel() {
        let layer = manager.makeDataLayer()
        var first = ValueMap()
        for i in 0..<20 { first["k\(i)"] = .int(Int64(i)) }
        layer.push(first)
        layer.push(["k3": "three", "k4": nil, "k5": DataLayer.notPresent, "new": true, "_clear": false])
        #expect(layer.get("k3") == "three")
        #expect(layer.get("k4") == .null)
        #expect(layer.get("k5") == 5)
        #expect(layer.get("_clear") == .undefined)
        #expect(layer.model.keys == (0..<20).map { "k\($0)" } + ["new"])
    }
}
