import ContainerKit
import Testing

struct LegacyFormatTests {
    private func loadError(_ json: String) throws -> ContainerError {
        do throws(ContainerError) {
            _ = try ContainerLoader().load(bytes: Array(json.utf8), file: "GTM-OLD1.json")
        } catch {
            return error
        }
        Issue.record("the container loaded")
        throw CancellationError()
    }

    @Test func exportFormatOnePointTwoIsRefusedByName() throws {
        let error = try loadError(
            """
            {"exportFormatVersion": 1.2, "exportTime": "2014-06-02 10:00:00",
             "container": {"publicId": "GTM-OLD1", "macros": [{"name": "event", "type": "e"}],
               "tags": [{"name": "UA", "type": "ua"}], "rules": [{"name": "All pages", "conditions": []}]}}
            """
        )
        #expect(error.code == .unknownFormat)
        #expect(error.message.contains("format 1.2"))
        #expect(error.message.contains("export that container again"))
        #expect(error.pointer == "/exportFormatVersion")
    }

    @Test func topLevelMacrosTagsAndConditionsAreTheLegacyExportEvenWithoutAVersion() throws {
        let error = try loadError(
            #"{"macros": [{"name": "event"}], "tags": [{"name": "UA"}], "conditions": [{"type": "equals"}]}"#
        )
        #expect(error.message.contains("2014 editor"))
    }

    @Test func serverContainerExportIsRefusedByName() throws {
        let error = try loadError(
            """
            {"exportFormatVersion": 2, "containerVersion": {
              "container": {"publicId": "GTM-SRV1", "usageContext": ["SERVER"]},
              "client": [{"clientId": "1", "name": "GA4", "type": "gaaw_client"}]}}
            """
        )
        #expect(error.code == .unknownFormat)
        #expect(error.message.contains("server-side"))
        #expect(error.pointer == "/containerVersion/container/usageContext")
    }

    @Test func ampAnalyticsConfigurationIsRefusedByName() throws {
        let error = try loadError(
            #"{"vars": {"account": "UA-1"}, "requests": {"pageview": "https://x/?a=${account}"}, "triggers": {}}"#
        )
        #expect(error.message.contains("AMP analytics configuration"))
    }

    /// An AMP page has no data layer: its export's page views would "fire" on a pushed gtm.js, meaning nothing.
    @Test func anAMPExportIsRefusedSayingWhereItsTagsRun() throws {
        let error = try loadError(
            """
            {"exportFormatVersion": 2, "containerVersion": {
              "container": {"publicId": "GTM-AMP1", "usageContext": ["AMP"]},
              "variable": [{"name": "A", "type": "c", "parameter": [{"type": "TEMPLATE", "key": "value", "value": "1"}]}]}}
            """
        )
        #expect(error.code == .unknownFormat)
        #expect(error.message.hasPrefix("this is an AMP (usageContext 'AMP') container export"))
        #expect(error.message.contains("export the site's web container instead"))
    }

    /// GTM serves a tag only inside its firing schedule; the export's schedule is reported, not silently ignored.
    @Test func aTagFiringScheduleIsReportedUnsupported() throws {
        let container = try TestContainers.load(
            json: """
                {"exportFormatVersion": 2, "containerVersion": {
                  "container": {"publicId": "GTM-SCH1", "usageContext": ["WEB"]},
                  "tag": [{"tagId": "1", "name": "Sale", "type": "html", "firingTriggerId": ["2147479553"],
                           "scheduleStartMs": "1577836800000", "scheduleEndMs": "1580515200000"}]}}
                """
        )
        let note = container.unsupported.first { $0.message.contains("firing schedule") }
        #expect(note?.pointer == "/containerVersion/tag/0/scheduleStartMs")
    }

    @Test func flatValuesNamedLikeLegacyKeysStillLoad() throws {
        let container = try TestContainers.load(json: #"{"tags": "a,b", "rules": "none"}"#)
        #expect(container.format == .flatValues)
    }
}

struct UnsupportedWordingTests {
    @Test func googleAnalyticsSettingsInAMobileContainerIsNotSupportedRatherThanBrowserOnly() throws {
        let container = try TestContainers.load(
            json: """
                {"fingerprint": "MQ$0", "resource": {"version": "1",
                  "macros": [{"function": "__e"}, {"function": "__gas", "vtp_trackingId": "UA-1-1"}],
                  "tags": [], "predicates": [], "rules": []}}
                """
        )
        let notes = container.unsupported.map(\.message)
        #expect(notes.contains("Google Analytics settings variable type '__gas' is not supported"))
        #expect(!notes.contains { $0.contains("browser-only") })
    }
}
