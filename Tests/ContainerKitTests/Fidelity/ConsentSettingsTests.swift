import ContainerKit
import ContainerKitTesting
import Testing

extension Fidelity {
    /// A tag whose consent settings ask for consent types is not silent: ContainerKit does not track consent,
    /// so it lists such tags in `Container.unsupported` (and lint reports each one) (issue 24, point 8).
    @Suite struct ConsentSettingsTests {
        static func resource(consent: String) throws -> Container {
            try TestContainers.resource(
                macros: #"[{"function": "__e"}]"#,
                tags: """
                    [{"function": "__funct", "tag_id": 1, "vtp_classPath": "t", "consent": \(consent)},
                     {"function": "__funct", "tag_id": 2, "vtp_classPath": "t", "consent": \(consent)}]
                    """,
                predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"}]"#,
                rules: #"[[["if", 0], ["add", 0, 1]]]"#
            )
        }

        static func export(status: String) throws -> Container {
            try TestContainers.load(
                json: """
                    {"exportFormatVersion": 2, "containerVersion": {
                      "container": {"publicId": "GTM-CONS1", "usageContext": ["WEB"]},
                      "tag": [{"tagId": "3", "name": "T", "type": "funct", "parameter": [
                        {"type": "TEMPLATE", "key": "classPath", "value": "t"}],
                        "consentSettings": {"consentStatus": "\(status)", "consentType": {"type": "LIST",
                          "list": [{"type": "TEMPLATE", "value": "ad_storage"}]}}}]}}
                    """
            )
        }

        @Test func aCompiledTagThatNeedsConsentIsListedAsUnsupportedOnce() throws {
            let container = try Self.resource(consent: #"["list", "analytics_storage"]"#)
            let consent = container.unsupported.filter { $0.message.contains("consent") }
            #expect(consent.count == 1)
            #expect(consent.first?.message.contains("(2 times)") == true)
            #expect(consent.first?.pointer == "/resource/tags/0/consent")
        }

        @Test func anEmptyConsentListIsNoCheck() throws {
            let container = try Self.resource(consent: #"["list"]"#)
            #expect(!container.unsupported.contains { $0.message.contains("consent") })
        }

        @Test func anExportTagWhoseConsentIsNeededIsListed() throws {
            let needed = try Self.export(status: "NEEDED")
            #expect(needed.unsupported.contains { $0.pointer == "/containerVersion/tag/0/consentSettings" })
            for status in ["NOT_SET", "NOT_NEEDED"] {
                #expect(!(try Self.export(status: status)).unsupported.contains { $0.message.contains("consent") })
            }
        }

        @Test func theTagStillFires() throws {
            let container = try Self.resource(consent: #"["list", "ad_storage"]"#)
            let manager = TagManager(logger: InMemoryLogger())
            manager.add(container)
            #expect(manager.makeDataLayer().push(event: "e").fired.count == 2)
        }
    }
}
