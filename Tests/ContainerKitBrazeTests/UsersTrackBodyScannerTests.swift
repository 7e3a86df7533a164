import ContainerKit
import ContainerKitTesting
import Testing

/// The stand-in's one-pass reading of `/users/track` bodies: it must count what a JSON parser would count,
/// and refuse what a JSON parser would refuse.
struct UsersTrackBodyScannerTests {
    @Test func countsEachCategoryAndCollectsEventTitles() throws {
        let body = #"""
            {"attributes":[{"external_id":"u1","plan":"gold"},{"external_id":"u2","tags":["a","b"]}],
             "events":[{"external_id":"u1","name":"played","time":"2026-11-26T05:00:00.000Z",
                        "properties":{"title":"Blue \"Train\" \u00e9","rating":4.5,"nested":{"title":"not me"}}},
                       {"braze_id":"d","name":"paused","properties":{"genre":"jazz"}},
                       {"braze_id":"d","name":"skipped"}],
             "purchases":[{"external_id":"u1","product_id":"p","currency":"EUR","price":-1.5e2,"quantity":1}]}
            """#
        let summary = try #require(UsersTrackBodyScanner.scan(Array(body.utf8)))
        #expect(summary.attributes == 2)
        #expect(summary.events == 3)
        #expect(summary.purchases == 1)
        #expect(summary.titles == ["Blue \"Train\" é"])
    }

    @Test func agreesWithTheJSONParserOnCounts() throws {
        let body =
            #"{"events":[{"name":"a","properties":{"title":"x"}},{"name":"b","properties":{"title":"y"}}],"attributes":[]}"#
        let summary = try #require(UsersTrackBodyScanner.scan(Array(body.utf8)))
        guard case .object(let map) = try Value(json: body) else {
            Issue.record("not an object")
            return
        }
        #expect(summary.events == map["events"]?.arrayValue?.count)
        #expect(summary.attributes == map["attributes"]?.arrayValue?.count)
        #expect(summary.purchases == 0)
        #expect(summary.titles == ["x", "y"])
    }

    @Test(arguments: [
        "", "[]", "{", "{\"events\":[}", "{\"events\":[1,]}", "{\"a\":tru}", "{\"a\":01}", "{\"a\":1.}",
        "{\"a\":\"\\x\"}", "{\"a\":\"line\nbreak\"}", "{\"a\":1} x", "{\"a\" 1}", "{'a':1}",
        "{\"a\":" + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + "}",
    ])
    func refusesWhatIsNotOneWellFormedObject(_ body: String) {
        #expect(UsersTrackBodyScanner.scan(Array(body.utf8)) == nil)
    }

    @Test func acceptsAnObjectWithoutTheCategories() throws {
        let summary = try #require(
            UsersTrackBodyScanner.scan(Array(#" {"events":{"not":"an array"},"x":[true,false,null]} "#.utf8))
        )
        #expect(summary == UsersTrackBodyScanner.Summary())
    }
}
