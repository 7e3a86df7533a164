import ContainerKit
import ContainerKitTesting
import Foundation
import Testing

extension Fidelity {
    /// Consent mode as GTM's web runtime evaluates it (issue 42): the consent state that `gtag('consent', …)`
    /// commands set, region-specific defaults, and tags whose consent settings require consent types.
    ///
    /// The expectations of ``regionPrecedence(_:)`` are what the consent code of a served gtm.js (2025: the
    /// `en` class with `default`/`fn`, `update` and `getConsentState`, `mn`, `sp`, `up` and the `consent` command
    /// handler), copied verbatim and run under node with the visitor's location stubbed, answered for the same
    /// commands.
    @Suite struct ConsentModeTests {
        struct Case: Sendable, CustomTestStringConvertible {
            /// The case, the visitor's location, the commands (JSON), and the types GTM's code denied and granted.
            let name, country, region, commands: String
            let denied, granted: [String]

            var testDescription: String { name }
        }

        static let cases: [Case] = [
            Case(
                name: "nothing set: granted",
                country: "ES",
                region: "ES-MD",
                commands: #"[]"#,
                denied: [],
                granted: ["ad_storage"]
            ),
            Case(
                name: "default without region",
                country: "ES",
                region: "ES-MD",
                commands: #"[["consent", "default", {"ad_storage": "denied"}]]"#,
                denied: ["ad_storage"],
                granted: ["analytics_storage"]
            ),
            Case(
                name: "regional default, visitor there",
                country: "ES",
                region: "",
                commands: #"[["consent", "default", {"ad_storage": "denied", "region": ["ES"]}]]"#,
                denied: ["ad_storage"],
                granted: []
            ),
            Case(
                name: "regional default, visitor elsewhere",
                country: "FR",
                region: "FR-75",
                commands: #"[["consent", "default", {"ad_storage": "denied", "region": ["ES"]}]]"#,
                denied: [],
                granted: ["ad_storage"]
            ),
            Case(
                name: "regional default wins over a later global one",
                country: "ES",
                region: "ES-MD",
                commands:
                    #"[["consent", "default", {"ad_storage": "denied", "region": ["ES"]}], ["consent", "default", {"ad_storage": "granted"}]]"#,
                denied: ["ad_storage"],
                granted: []
            ),
            Case(
                name: "regional default wins over an earlier global one",
                country: "ES",
                region: "ES-MD",
                commands:
                    #"[["consent", "default", {"ad_storage": "granted"}], ["consent", "default", {"ad_storage": "denied", "region": ["ES"]}]]"#,
                denied: ["ad_storage"],
                granted: []
            ),
            Case(
                name: "subdivision wins over country, country first",
                country: "ES",
                region: "ES-MD",
                commands:
                    #"[["consent", "default", {"ad_storage": "denied", "region": ["ES"]}], ["consent", "default", {"ad_storage": "granted", "region": ["ES-MD"]}]]"#,
                denied: [],
                granted: ["ad_storage"]
            ),
            Case(
                name: "subdivision wins over country, subdivision first",
                country: "ES",
                region: "ES-MD",
                commands:
                    #"[["consent", "default", {"ad_storage": "granted", "region": ["ES-MD"]}], ["consent", "default", {"ad_storage": "denied", "region": ["ES"]}]]"#,
                denied: [],
                granted: ["ad_storage"]
            ),
            Case(
                name: "unknown location: every default applies, a denied one stays",
                country: "",
                region: "",
                commands:
                    #"[["consent", "default", {"ad_storage": "denied", "region": ["ES"]}], ["consent", "default", {"ad_storage": "granted"}]]"#,
                denied: ["ad_storage"],
                granted: []
            ),
            Case(
                name: "unknown location: a later denied default applies",
                country: "",
                region: "",
                commands:
                    #"[["consent", "default", {"ad_storage": "granted", "region": ["ES"]}], ["consent", "default", {"ad_storage": "denied"}]]"#,
                denied: ["ad_storage"],
                granted: []
            ),
            Case(
                name: "update grants everywhere",
                country: "FR",
                region: "",
                commands:
                    #"[["consent", "default", {"ad_storage": "denied"}], ["consent", "update", {"ad_storage": "granted"}]]"#,
                denied: [],
                granted: ["ad_storage"]
            ),
            Case(
                name: "update denies after a regional grant",
                country: "ES",
                region: "ES-MD",
                commands:
                    #"[["consent", "default", {"ad_storage": "granted", "region": ["ES"]}], ["consent", "update", {"ad_storage": "denied"}]]"#,
                denied: ["ad_storage"],
                granted: []
            ),
            Case(
                name: "update null denies",
                country: "ES",
                region: "",
                commands: #"[["consent", "update", {"ad_storage": null}]]"#,
                denied: ["ad_storage"],
                granted: []
            ),
            Case(
                name: "default null sets nothing",
                country: "ES",
                region: "",
                commands: #"[["consent", "default", {"ad_storage": null}]]"#,
                denied: [],
                granted: ["ad_storage"]
            ),
            Case(
                name: "a value other than granted denies",
                country: "ES",
                region: "",
                commands: #"[["consent", "default", {"ad_storage": "yes", "analytics_storage": true}]]"#,
                denied: ["ad_storage", "analytics_storage"],
                granted: []
            ),
            Case(
                name: "region given as one lower-case code",
                country: "ES",
                region: "",
                commands: #"[["consent", "default", {"ad_storage": "denied", "region": "es"}]]"#,
                denied: ["ad_storage"],
                granted: []
            ),
            Case(
                name: "empty region list applies nowhere",
                country: "ES",
                region: "ES-MD",
                commands: #"[["consent", "default", {"ad_storage": "denied", "region": []}]]"#,
                denied: [],
                granted: ["ad_storage"]
            ),
            Case(
                name: "subdivision default, visitor's subdivision unknown",
                country: "ES",
                region: "",
                commands: #"[["consent", "default", {"ad_storage": "denied", "region": ["ES-MD"]}]]"#,
                denied: [],
                granted: ["ad_storage"]
            ),
            Case(
                name: "global denied then country granted",
                country: "ES",
                region: "ES-CT",
                commands:
                    #"[["consent", "default", {"ad_storage": "denied"}], ["consent", "default", {"ad_storage": "granted", "region": ["ES"]}]]"#,
                denied: [],
                granted: ["ad_storage"]
            ),
            Case(
                name: "one default for several regions",
                country: "ES",
                region: "",
                commands:
                    #"[["consent", "default", {"ad_storage": "denied", "analytics_storage": "denied", "region": ["FR", "ES"]}]]"#,
                denied: ["ad_storage", "analytics_storage"],
                granted: []
            ),
            Case(
                name: "later global default replaces an earlier one",
                country: "ES",
                region: "",
                commands:
                    #"[["consent", "default", {"ad_storage": "denied"}], ["consent", "default", {"ad_storage": "granted"}]]"#,
                denied: [],
                granted: ["ad_storage"]
            ),
            Case(
                name: "a default after an update keeps the update",
                country: "ES",
                region: "",
                commands:
                    #"[["consent", "update", {"ad_storage": "granted"}], ["consent", "default", {"ad_storage": "denied"}]]"#,
                denied: [],
                granted: ["ad_storage"]
            ),
            Case(
                name: "wait_for_update changes nothing",
                country: "",
                region: "",
                commands: #"[["consent", "default", {"ad_storage": "denied", "wait_for_update": 500}]]"#,
                denied: ["ad_storage"],
                granted: []
            ),
        ]

        @Test(arguments: cases) func regionPrecedence(_ c: Case) throws {
            var context = ClientContext()
            if !c.country.isEmpty { try context.setValue(c.country, forKey: "country") }
            if !c.region.isEmpty { try context.setValue(c.region, forKey: "region") }
            let manager = TagManager(logger: InMemoryLogger(), defaultContext: context)
            let session = manager.makeDataLayer()
            guard case .array(let commands) = try Value(json: c.commands) else { Issue.record("not a list"); return }
            for command in commands {
                guard case .array(let arguments) = command else { continue }
                session.push(try ConsentCommand(gtagArguments: arguments))
            }
            let state = session.consent
            for type in c.denied { #expect(!state.isGranted(type), "\(type)") }
            for type in c.granted { #expect(state.isGranted(type), "\(type)") }
        }

        /// Tag 1 requires `consent` (a compiled `consent` list), tag 2 requires nothing; both fire on `e`. Tag 1's
        /// extra JSON is `extra`.
        static func container(consent: String = #"["list", "ad_storage", "analytics_storage"]"#, extra: String = "")
            throws -> Container
        {
            try TestContainers.resource(
                macros: #"[{"function": "__e"}]"#,
                tags: """
                    [{"function": "__funct", "tag_id": 1, "vtp_classPath": "t", "consent": \(consent)\(extra)},
                     {"function": "__funct", "tag_id": 2, "vtp_classPath": "u"}]
                    """,
                predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"}]"#,
                rules: #"[[["if", 0], ["add", 0, 1]]]"#
            )
        }

        static func manager(_ container: Container, context: ClientContext = .server) -> (TagManager, RecordingHandler)
        {
            let manager = TagManager(logger: InMemoryLogger(), defaultContext: context)
            manager.add(container)
            let recorder = RecordingHandler()
            manager.register(tagHandler: recorder, for: "t")
            manager.register(tagHandler: recorder, for: "u")
            return (manager, recorder)
        }

        static func command(_ kind: ConsentCommand.Kind, _ settings: [String: String], regions: [String]? = nil)
            -> ConsentCommand
        {
            ConsentCommand(
                kind: kind,
                settings: settings.sorted { $0.key < $1.key }.map {
                    ConsentCommand.Setting(type: $0.key, value: $0.value)
                },
                regions: regions
            )
        }

        @Test func aTagWhoseConsentIsDeniedIsBlockedAndNamesTheTypes() throws {
            let (manager, recorder) = Self.manager(try Self.container())
            let session = manager.makeDataLayer()
            session.push(Self.command(.default, ["ad_storage": "denied", "analytics_storage": "granted"]))
            let result = session.push(event: "e")
            let blocked = try #require(result.fired.first { $0.tagID == 1 })
            #expect(blocked.status == .blockedByConsent(["ad_storage"]))
            #expect(blocked.status.name == "blocked_by_consent")
            #expect(blocked.status.message == "consent not granted: 'ad_storage'")
            #expect(blocked.classPath == "t")
            #expect(result.fired.first { $0.tagID == 2 }?.status == .ok)
            #expect(recorder.calls.map(\.name) == ["u"])
            #expect(JSONWriter.string(result.jsonValue).contains(#""status":"blocked_by_consent""#))
        }

        @Test func anUpdateThatGrantsLetsTheTagFireOnTheNextEvent() throws {
            let (manager, recorder) = Self.manager(try Self.container())
            let session = manager.makeDataLayer()
            session.push(Self.command(.default, ["ad_storage": "denied", "analytics_storage": "denied"]))
            #expect(
                session.push(event: "e").fired.first?.status == .blockedByConsent(["ad_storage", "analytics_storage"])
            )
            session.push(Self.command(.update, ["ad_storage": "granted", "analytics_storage": "granted"]))
            #expect(session.push(event: "e").fired.first?.status == .ok)
            #expect(recorder.calls.map(\.name) == ["u", "t", "u"])
        }

        // gtm.js runs a type nobody set as granted (`mn`: state 0 → true; 2022: `ij`: undefined → true).
        @Test func aTypeNoCommandNamedCountsAsGranted() throws {
            let (manager, _) = Self.manager(try Self.container())
            #expect(manager.makeDataLayer().push(event: "e").fired.allSatisfy { $0.status == .ok })
        }

        // gtm.js wraps a once-only tag's executor once (`er`/`fr`): its one run, blocked, is its outcome for the page.
        @Test func aOncePerLoadTagBlockedByConsentStaysBlockedAfterAnUpdate() throws {
            let (manager, recorder) = Self.manager(try Self.container(extra: #", "once_per_load": true"#))
            let session = manager.makeDataLayer()
            session.push(Self.command(.default, ["ad_storage": "denied"]))
            #expect(session.push(event: "e").fired.first?.status == .blockedByConsent(["ad_storage"]))
            session.push(Self.command(.update, ["ad_storage": "granted"]))
            session.push(event: "e")
            #expect(!recorder.calls.map(\.name).contains("t"))
        }

        // gtm.js: the consent check calls the tag's failure continuation (`h()`), so "don't fire if setup fails"
        // stops the main tag.
        @Test func aSetupTagBlockedByConsentStopsItsMainTag() throws {
            let container = try TestContainers.resource(
                macros: #"[{"function": "__e"}]"#,
                tags: """
                    [{"function": "__funct", "tag_id": 1, "vtp_classPath": "t", "consent": ["list", "ad_storage"]},
                     {"function": "__funct", "tag_id": 2, "vtp_classPath": "u", "setup_tags": ["list", ["tag", 0, 1]]}]
                    """,
                predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"}]"#,
                rules: #"[[["if", 0], ["add", 1]]]"#
            )
            let (manager, recorder) = Self.manager(container)
            let session = manager.makeDataLayer()
            session.push(Self.command(.default, ["ad_storage": "denied"]))
            let result = session.push(event: "e")
            #expect(result.fired.map(\.status) == [.blockedByConsent(["ad_storage"])])
            #expect(recorder.calls.isEmpty)
        }

        @Test func anExportTagWithConsentNeededIsChecked() throws {
            let container = try TestContainers.load(
                json: """
                    {"exportFormatVersion": 2, "containerVersion": {
                      "container": {"publicId": "GTM-CONS1", "usageContext": ["WEB"]},
                      "tag": [{"tagId": "3", "name": "T", "type": "funct", "firingTriggerId": ["2147479553"],
                        "parameter": [{"type": "TEMPLATE", "key": "classPath", "value": "t"}],
                        "consentSettings": {"consentStatus": "NEEDED", "consentType": {"type": "LIST",
                          "list": [{"type": "TEMPLATE", "value": "ad_storage"}]}}}]}}
                    """
            )
            #expect(!container.unsupported.contains { $0.message.contains("consent") })
            let (manager, _) = Self.manager(container)
            // No location known: gtm.js applies every default, regional ones too (`e === ""`).
            #expect(try Self.underSpanishDefault(manager, event: "gtm.js") == .blockedByConsent(["ad_storage"]))
            #expect(try Self.underSpanishDefault(manager, country: "FR", event: "gtm.js") == .ok)
        }

        /// The status of the first tag fired by `event` in a new session of a visitor in `country` (unknown when
        /// empty) after a default denying `ad_storage` for Spain.
        static func underSpanishDefault(_ manager: TagManager, country: String = "", event: String) throws
            -> FiredTag.Status?
        {
            var context = ClientContext()
            try context.setValue(country, forKey: "country")
            let session = manager.makeDataLayer(context: context)
            session.push(Self.command(.default, ["ad_storage": "denied"], regions: ["ES"]))
            return session.push(event: event).fired.first?.status
        }

        @Test func theRegionComesFromTheSessionsContext() throws {
            var spain = ClientContext()
            try spain.setValue("ES", forKey: "country")
            try spain.setValue("es-md", forKey: "region")
            #expect(spain.country == "ES" && spain.region == "ES-MD")
            let (manager, _) = Self.manager(try Self.container(consent: #"["list", "ad_storage"]"#), context: spain)
            let session = manager.makeDataLayer()
            session.push(Self.command(.default, ["ad_storage": "denied"], regions: ["ES"]))
            session.push(Self.command(.default, ["ad_storage": "granted"]))
            #expect(session.push(event: "e").fired.first?.status == .blockedByConsent(["ad_storage"]))
            #expect(try Self.underSpanishDefault(manager, country: "FR", event: "e") == .ok)
        }

        @Test func aConsentCommandChangesNoDataLayerKeyAndEvaluatesNothing() throws {
            let (manager, recorder) = Self.manager(try Self.container())
            let session = manager.makeDataLayer()
            let result = session.push(
                try ConsentCommand(gtagArguments: ["consent", "default", ["ad_storage": "denied", "region": ["ES"]]])
            )
            #expect(result.events.isEmpty && recorder.calls.isEmpty && session.model.isEmpty)
            #expect(session.consent.entry("ad_storage")?.region == "ES")
        }

        @Test(arguments: [
            (#"["config", "G-1"]"#, "/0"),
            (#"["consent", "default"]"#, ""),
            (#"["consent", "grant", {}]"#, "/1"),
            (#"["consent", "update", "granted"]"#, "/2"),
            (#"["consent", "default", {"region": [1]}]"#, "/2/region/0"),
            (#"[]"#, "/0"),
        ])
        func aMalformedCommandIsRefusedWithItsPlace(_ json: String, _ pointer: String) throws {
            guard case .array(let arguments) = try Value(json: json) else { return }
            #expect {
                _ = try ConsentCommand(gtagArguments: arguments)
            } throws: { error in
                (error as? ContainerError)?.code == .invalidCommand && (error as? ContainerError)?.pointer == pointer
            }
        }

        @Test func gtagArgumentsRoundTrip() throws {
            let arguments: [Value] = [
                "consent", "default", ["ad_storage": "denied", "region": ["ES", "FR"], "wait_for_update": 500],
            ]
            let command = try ConsentCommand(gtagArguments: arguments)
            #expect(command.waitForUpdate == 500 && command.regions == ["ES", "FR"])
            #expect(try ConsentCommand(gtagArguments: command.gtagArguments) == command)
        }

        @Test(arguments: ["E", "ESP", "E1", "12"]) func aBadCountryIsRefused(_ code: String) {
            var context = ClientContext()
            #expect(throws: ContainerError.self) { try context.setValue(code, forKey: "country") }
        }

        @Test func aRegionOutsideTheCountryIsRefused() throws {
            var context = ClientContext()
            try context.setValue("FR", forKey: "country")
            #expect(throws: ContainerError.self) { try context.setValue("ES-MD", forKey: "region") }
            #expect(throws: ContainerError.self) { try context.setValue("ESMD", forKey: "region") }
            let read = try ClientContext(jsonValue: ["country": "es", "region": "ES-CT"])
            #expect(read.country == "ES" && read.region == "ES-CT")
            #expect(try ClientContext(jsonValue: read.jsonValue) == read)
        }

        /// A region is checked against the country whichever comes first in the object; before, a region first
        /// was silently cleared by the country after it.
        @Test(arguments: [
            ["region": "FR-75", "country": "ES"] as ValueMap, ["country": "ES", "region": "FR-75"],
        ])
        func aRegionOutsideTheCountryIsRefusedInEitherOrderAtItsKey(_ map: ValueMap) throws {
            let error = #expect(throws: ContainerError.self) { try ClientContext(jsonValue: .object(map)) }
            #expect(error?.pointer == "/region")
            #expect(error?.message == "context key 'region' 'FR-75' is not in the country 'ES'")
            let decoded = #expect(throws: (any Error).self) {
                try JSONDecoder().decode(ClientContext.self, from: Data(JSONWriter.bytes(.object(map))))
            }
            #expect((decoded as? ContainerError)?.code == .invalidStructure)
            let read = try ClientContext(jsonValue: ["region": "es-md", "country": "ES"])
            #expect(read.region == "ES-MD")
        }

        @Test func aContextErrorNamesItsKey() {
            let error = #expect(throws: ContainerError.self) {
                try ClientContext(jsonValue: ["platform": "ios", "advertising_tracking_enabled": "maybe"])
            }
            #expect(error?.pointer == "/advertising_tracking_enabled")
        }
    }
}
