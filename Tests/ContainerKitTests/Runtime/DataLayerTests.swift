import ContainerKit
import ContainerKitTesting
import Testing

struct DataLayerTests {
    let manager = TagManager(logger: InMemoryLogger())

    @Test func dottedKeysExpandIntoNestedMaps() {
        let layer = manager.makeDataLayer()
        layer.push(["a.b.c": "v"])
        layer.push(["a.b.d": 4])
        #expect(layer.model == ["a": ["b": ["c": "v", "d": 4]]])
        #expect(layer.get("a.b.d") == 4)
        #expect(layer.get("a.x.y") == .undefined)
    }

    @Test func arraysMergeIndexByIndexAndNotPresentKeepsElements() {
        // The SDK documentation's own example.
        let layer = manager.makeDataLayer()
        layer.push(["items": ["item1", nil, "item2", ["a": "aValue", "b": "bValue"]]])
        layer.push(["items": [nil, "item6", DataLayer.notPresent, ["a": nil]]])
        #expect(layer.get("items") == [nil, "item6", "item2", ["a": nil, "b": "bValue"]])
    }

    @Test func shorterArrayKeepsTheExistingTail() {
        let layer = manager.makeDataLayer()
        layer.push(["list": [1, 2, 3]])
        layer.push(["list": [9]])
        #expect(layer.get("list") == [9, 2, 3])
    }

    @Test func scalarsAndNullOverwriteAndTypesChangeWholesale() {
        let layer = manager.makeDataLayer()
        layer.push(["a": ["b": 1]])
        layer.push(["a": "scalar"])
        #expect(layer.get("a") == "scalar")
        layer.push(["a": ["c": 2]])
        #expect(layer.get("a") == ["c": 2])
        layer.push(["a": nil])
        #expect(layer.get("a") == .null)
    }

    @Test func pushesFromHandlersAreQueuedAndProcessedAfterTheCurrentOne() throws {
        let container = try TestContainers.resource(
            macros: #"[{"function": "__e"}]"#,
            tags:
                #"[{"function": "__funct", "tag_id": 1, "vtp_classPath": "a"}, {"function": "__funct", "tag_id": 2, "vtp_classPath": "b"}]"#,
            predicates:
                #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "first"}, {"function": "_eq", "arg0": ["macro", 0], "arg1": "second"}]"#,
            rules: #"[[["if", 0], ["add", 0]], [["if", 1], ["add", 1]]]"#
        )
        manager.add(container)
        let order = RecordingHandler { call in
            if call.eventName == "first" {
                let nested = call.dataLayer.push(["event": "second", "nested": 1])
                #expect(nested.events.isEmpty)  // queued, not processed inside the handler
                #expect(call.dataLayer.get("nested") == .undefined)
                #expect(call.dataLayer.get("marker") == 1)
            }
        }
        manager.register(tagHandler: order, for: "a")
        manager.register(tagHandler: order, for: "b")
        let layer = manager.makeDataLayer()
        let result = layer.push(["event": "first", "marker": 1])
        #expect(result.events.map(\.eventName) == ["first", "second"])
        #expect(order.calls.map(\.name) == ["a", "b"])
    }

    @Test func loopGuardStopsInfinitePushing() throws {
        let logger = InMemoryLogger()
        let manager = TagManager(logger: logger)
        manager.add(
            try TestContainers.resource(
                macros: #"[{"function": "__e"}]"#,
                tags: #"[{"function": "__funct", "tag_id": 1, "vtp_classPath": "loop"}]"#,
                predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "again"}]"#,
                rules: #"[[["if", 0], ["add", 0]]]"#
            )
        )
        manager.register(tagHandler: ClosureTagHandler { call in call.dataLayer.push(event: "again") }, for: "loop")
        let layer = manager.makeDataLayer()
        let result = layer.push(event: "again")
        #expect(result.loopGuardTripped)
        #expect(result.events.count == DataLayer.maximumNestedPushes + 1)
        #expect(logger.messages(at: .error).contains { $0.contains("infinite loop") })
        // The data layer still works afterwards.
        #expect(layer.push(["k": 1]).loopGuardTripped == false)
    }

    @Test func sessionsAreIsolated() {
        let one = manager.makeDataLayer()
        let two = manager.makeDataLayer()
        one.push(["user": "a"])
        one.setAttribute("x", forKey: "k")
        #expect(two.get("user") == .undefined)
        #expect(two.attribute("k") == nil)
        #expect(one.sessionID != two.sessionID)
    }
}

struct DataLayerLimitTests {
    @Test func aKeyWithThousandsOfDotsExpandsOnlySoDeep() {
        let layer = TagManager(logger: InMemoryLogger()).makeDataLayer()
        let key = Array(repeating: "a", count: 50_000).joined(separator: ".")
        layer.push([key: 1])
        let path = Array(repeating: "a", count: DataLayer.maximumKeyDepth - 1).joined(separator: ".")
        let tail = Array(repeating: "a", count: 50_000 - DataLayer.maximumKeyDepth + 1).joined(separator: ".")
        guard case .object(let inner) = layer.get(path) else {
            Issue.record("expected a map at depth \(DataLayer.maximumKeyDepth - 1)")
            return
        }
        #expect(inner[tail] == 1)
    }
}

/// A session's data layer has a size limit: a push that would pass it is refused at push time, with a clear
/// error, and changes nothing; pushes that fit (or that replace a large value) go on.
@Suite struct DataLayerSizeLimitTests {
    @Test func aPushThatWouldPassTheLimitIsRefusedAndChangesNothing() async throws {
        let logger = InMemoryLogger()
        let manager = TagManager(logger: logger, maximumDataLayerBytes: 64 << 10)
        let session = manager.makeDataLayer()
        let chunk = String(repeating: "x", count: 10_000)
        var accepted = 0
        for index in 0..<10 {
            let result = await session.push(["k\(index)": .string(chunk)])
            guard let refusal = result.refusal else {
                accepted += 1
                continue
            }
            #expect(refusal.code == .sessionTooLarge)
            #expect(refusal.message.contains("over its limit of 65536"))
            #expect(session.get("k\(index)").isUndefined, "a refused push merged nothing")
        }
        // 10,000-byte strings in 64 KiB, the one being pushed counted twice (it may land in the raw values
        // too): five fit, the rest do not.
        #expect(accepted == 5)
        #expect(logger.messages(at: .warning).contains { $0.contains("too large") })
        // Replacing a large value with a small one frees the room: the exact size is measured again.
        #expect(await session.push(["k0": "small", "k1": "small"]).refusal == nil)
        #expect(await session.push(["k8": .string(chunk)]).refusal == nil)
        #expect(session.get("k8") == .string(chunk))
    }

    @Test func escapedCharactersCountAtTheirEscapedSize() {
        #expect(Value.string("ab").encodedSizeBound(scanning: true) == 4)
        #expect(Value.string("a\u{0}\"").encodedSizeBound(scanning: true) == 2 + 1 + 6 + 6)
        #expect(
            Value.string("héllo").encodedSizeBound(scanning: false)
                >= Value.string("héllo").encodedSizeBound(scanning: true)
        )
        let map: ValueMap = ["a": [1, "x"], "b": ["c": .null]]
        #expect(map.encodedSizeBound(scanning: true) >= JSONWriter.bytes(.object(map), keepsNumberTypes: true).count)
    }

    @Test func withoutALimitNothingIsRefused() async {
        let session = TagManager(logger: InMemoryLogger(), maximumDataLayerBytes: nil).makeDataLayer()
        let result = await session.push(["big": .string(String(repeating: "y", count: 5 << 20))])
        #expect(result.refusal == nil)
    }
}
