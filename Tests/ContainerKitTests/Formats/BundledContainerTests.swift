import ContainerKit
import ContainerKitTesting
import Testing

struct BundledContainerTests {
    @Test func compiledResourceFiresTheBrazeTagsOfTheMusicSession() async throws {
        let container = try await ContainerLoader().load(path: TestContainers.bundled("GTM-MUSIC01.json"))
        #expect(container.id == "GTM-MUSIC01")
        #expect(container.format == .compiledResource)
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        let recorder = RecordingHandler()
        manager.register(tagHandler: recorder, for: "com.appboy.googletagmanager.BrazeGtmTagProvider")
        let layer = manager.makeDataLayer(context: ClientContext(appID: "com.example.music"))

        let played = await layer.push(
            event: "played song",
            parameters: ["title": "So What", "genre": "jazz", "duration": 545]
        )
        #expect(played.fired.map(\.tagID) == [1])  // the paused tag 5 never fires
        #expect(
            recorder.calls.last?.arguments
                == [
                    "actionType": "logEvent", "eventName": "played song", "title": "So What", "genre": "jazz",
                    "duration": 545, "genre_family": "instrumental", "app": "app:com.example.music",
                ]
        )
        await #expect(layer.push(event: "played song", parameters: ["genre": "rock", "duration": 12]).fired.isEmpty)
        await #expect(layer.push(event: "played song", parameters: ["genre": "Debug", "duration": 60]).fired.isEmpty)

        let purchase = await layer.push(event: "purchase", parameters: ["product_id": "premium-month", "price": 9.99])
        #expect(
            purchase.fired.first?.parameters
                == [
                    "actionType": "logPurchase", "productId": "premium-month", "currency": "USD", "price": 9.99,
                    "quantity": 1, "plan": "premium (month)",
                ]
        )
        #expect(container.string(forKey: "welcome_message") == "Welcome to the music app")
        #expect(container.int64(forKey: "max_skips_per_hour") == 6)
    }

    @Test func exportCompilesTriggersVariablesAndReferences() async throws {
        let container = try await ContainerLoader().load(path: TestContainers.bundled("GTM-MUSICEX.json"))
        #expect(container.id == "GTM-MUSICEX")
        #expect(container.format == .export)
        #expect(container.version == "3")
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        let layer = manager.makeDataLayer(context: ClientContext(appName: "Tunes"))

        let played = await layer.push(
            event: "played song",
            parameters: ["title": "So What", "genre": "JAZZ", "duration": 545]
        )
        let tag = try #require(played.fired.first)
        #expect(tag.tagID == 10)
        #expect(tag.classPath == "com.appboy.googletagmanager.BrazeGtmTagProvider")
        // A value that is exactly one reference keeps its type; mixed text becomes a string.
        #expect(
            tag.parameters
                == [
                    "actionType": "logEvent", "eventName": "played song", "title": "So What", "genre": "jazz",
                    "duration": 545, "label": "jazz / So What",
                ]
        )
        // The blocking trigger (test genres, ignore case) wins.
        await #expect(layer.push(event: "played song", parameters: ["genre": "TEST", "duration": 99]).fired.isEmpty)
        // A negated regex condition: the user id must not be blank.
        await #expect(layer.push(event: "login", parameters: ["user_id": "  "]).fired.isEmpty)
        await #expect(layer.push(event: "login", parameters: ["user_id": "u-1"]).fired.map(\.tagID) == [11])
        #expect(layer.string(forKey: "welcome_message") == "Welcome, Tunes listener")
        #expect(layer.string(forKey: "Genre") == "unknown")
    }

    @Test func flatPropertyListFeedsTheTypedGetters() async throws {
        let container = try await ContainerLoader().load(path: TestContainers.bundled("GTM-DEFAULT1.plist"))
        #expect(container.id == "GTM-DEFAULT1")
        #expect(container.format == .flatValues)
        #expect(container.string(forKey: "welcome_message") == "Hello from the default container")
        #expect(container.int64(forKey: "max_skips_per_hour") == 6)
        #expect(container.bool(forKey: "shuffle_enabled"))
        #expect(container.double(forKey: "price_multiplier") == 1.25)
    }

    @Test func danglingIndexIsAClearError() throws {
        #expect {
            try TestContainers.resource(
                macros: #"[{"function": "__c", "vtp_value": ["macro", 4]}]"#
            )
        } throws: { error in
            let error = try #require(error as? ContainerError)
            return error.code == .danglingReference && error.pointer == "/resource/macros/0/vtp_value"
        }
    }

    @Test(arguments: [
        (#"[1, 2]"#, ContainerError.Code.unknownFormat),
        (#"{"resource": 5}"#, .invalidStructure),
        (#"{"resource": {"rules": [[["add", 9]]]}}"#, .danglingReference),
        (#"{"resource": {"tags": [{"tag_id": 1}]}}"#, .invalidStructure),
        (#"{"exportFormatVersion": 2}"#, .unknownFormat),
        (
            #"{"containerVersion": {"tag": [{"name": "t", "type": "funct", "firingTriggerId": ["99"]}]}}"#,
            .danglingReference
        ),
        (#"{"nested": {"not": "flat"}}"#, .unknownFormat),
    ])
    func malformedContainersGiveCodedErrors(json: String, code: ContainerError.Code) {
        #expect {
            try TestContainers.load(json: json)
        } throws: { error in
            (error as? ContainerError)?.code == code
        }
    }

    /// A data-layer dump (`copy(JSON.stringify(dataLayer))`) given where a container is expected says what it is.
    @Test func aDataLayerDumpGivenAsAContainerIsSaidToBeOne() throws {
        for (json, hint) in [(#"[{"event": "gtm.js"}, {"event": "login"}]"#, true), (#"[1, 2]"#, false)] {
            let error = try #require(throws: ContainerError.self) { try TestContainers.load(json: json) }
            #expect(error.code == .unknownFormat)
            #expect(
                error.message
                    == "top level is an array, not an object"
                    + (hint
                        ? "; an array of objects is a data-layer dump (pushes to run a container over), not a container"
                        : "")
            )
        }
    }
}
