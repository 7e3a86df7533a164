import ContainerKit
import ContainerKitBraze
import Testing

/// Every error code keeps its public shape (a `String` raw value that is its description, `Hashable`,
/// `Sendable`, extensible with `init(rawValue:)`) now that the shape is written once (`ErrorCode`).
struct ErrorCodeTests {
    /// What a client outside the package can do with any code.
    static func shape<C: RawRepresentable & Sendable & Hashable & CustomStringConvertible>(_ code: C) -> String
    where C.RawValue == String {
        #expect(C(rawValue: code.rawValue) == code)
        #expect(Set([code, code]).count == 1)
        #expect(code.description == code.rawValue)
        #expect("\(code)" == code.rawValue)
        return code.description
    }

    @Test func everyCodeIsItsOwnDescription() {
        #expect(Self.shape(ContainerError.Code.fileTooLarge) == "file_too_large")
        #expect(Self.shape(ContainerFetchError.Code.noNetwork) == "no_network")
        #expect(Self.shape(PreviewURLError.Code.malformed) == PreviewURLError.Code.malformed.rawValue)
        #expect(Self.shape(DeliveryError.Code.rejected) == DeliveryError.Code.rejected.rawValue)
        #expect(Self.shape(AnalyticsRecordError.Code.malformedJSON) == AnalyticsRecordError.Code.malformedJSON.rawValue)
        #expect(Self.shape(AnalyticsSinkError.Code.unwritable) == AnalyticsSinkError.Code.unwritable.rawValue)
        #expect(Self.shape(BrazeRuleViolation.Rule.invalidCurrency) == "invalid_currency")
        #expect(Self.shape(ContainerError.Code(rawValue: "my_code")) == "my_code")
    }
}

/// Each module has one error type with an extensible code; the older names are aliases of it, so their
/// codes, messages and descriptions read as before.
struct OneErrorTypePerModuleTests {
    @Test func theOlderErrorNamesAreAliasesOfTheirModulesErrorType() {
        #expect(ContainerFetchError.self == ContainerError.self)
        #expect(PreviewURLError.self == ContainerError.self)
        #expect(AnalyticsSinkError.self == DeliveryError.self)
        #expect(AnalyticsRecordError.self == DeliveryError.self)
        // ContainerKit's durability waits and regular expressions throw its one error type too.
        #expect(DurabilityError.self == ContainerError.self)
        #expect(RegexPatternError.self == ContainerError.self)
    }

    @Test func aRegexErrorIsAContainerErrorLocatedInItsPattern() throws {
        let thrown = #expect(throws: ContainerError.self) { try RegexPattern("é(") }
        let error = try #require(thrown)
        #expect(error.code == .invalidRegex && error.code.rawValue == "invalid_regex")
        #expect(error.location == SourceLocation(line: 1, column: 2, offset: 2))
        #expect(error.description == "1:2: missing ')' to close '(' (invalid_regex)")
        #expect(ContainerError.Code.unsupportedRegex.rawValue == "unsupported_regex")
    }

    @Test func codesKeepTheirText() {
        let container: [(ContainerError.Code, String)] = [
            (.noNetwork, "no_network"), (.networkError, "network_error"), (.httpStatus, "http_status"),
            (.badResponse, "bad_response"), (.notFound, "not_found"), (.invalidContainer, "invalid_container"),
            (.invalidURL, "invalid_url"), (.notConfigured, "not_configured"), (.unknown, "unknown"),
            (.malformed, "malformed_preview_url"), (.io, "io_error"), (.tooLarge, "too_large"),
            (.invalidContainerID, "invalid_container_id"),
        ]
        for (code, text) in container { #expect(code.rawValue == text) }
        let delivery: [(DeliveryError.Code, String)] = [
            (.unwritable, "unwritable"), (.diskFull, "disk_full"), (.queueFull, "queue_full"), (.locked, "locked"),
            (.closed, "closed"), (.corruptFile, "corrupt_file"), (.malformedJSON, "malformed_json"),
            (.invalidRecord, "invalid_record"), (.io, "io_error"), (.rejected, "rejected"),
        ]
        for (code, text) in delivery { #expect(code.rawValue == text) }
    }

    @Test func whereItHappenedIsKeptAndDescribedAsBefore() {
        let fetch = ContainerFetchError(.httpStatus, "server answered 503", status: 503)
        #expect(fetch.status == 503 && fetch.isRefusal == false && fetch.refreshFailure == .serverError)
        #expect(fetch.description == "server answered 503 (http_status)")
        let sink = AnalyticsSinkError(.diskFull, "no space left for 'queue'", errorNumber: 28)
        #expect(sink.errorNumber == 28)
        #expect(sink.description == "no space left for 'queue' (disk_full)")
        let load = ContainerError(
            .syntax,
            "unexpected '}'",
            file: "a.json",
            location: SourceLocation(line: 2, column: 3)
        )
        #expect(load.description == "a.json:2:3: unexpected '}' (syntax_error)")
    }
}

/// A store's failure becomes a ``DurabilityError`` once, keeping what it means; the codes' text is stable
/// (a service answers by it).
struct DurabilityErrorTests {
    @Test(arguments: [
        (AnalyticsSinkError.Code.diskFull, DurabilityError.Code.diskFull), (.unwritable, .unwritable),
        (.queueFull, .full), (.closed, .stopped), (.shutDown, .stopped), (.superseded, .superseded),
        (.unavailable, .unavailable), (.timeout, .timeout), (.io, .io), (.corruptFile, .io), (.locked, .io),
    ])
    func aStoreFailureIsConvertedOnceKeepingItsMeaning(store: AnalyticsSinkError.Code, expected: DurabilityError.Code) {
        let error = DurabilityError(AnalyticsSinkError(store, "cannot write \"segment-1\"", errorNumber: 28))
        #expect(error.code == expected)
        #expect(error.message == "cannot write \"segment-1\"")
        #expect(error.errorNumber == 28)
    }

    @Test func codesKeepTheirText() {
        let codes: [(DurabilityError.Code, String)] = [
            (.diskFull, "disk_full"), (.io, "io_error"), (.unwritable, "unwritable"), (.full, "full"),
            (.stopped, "stopped"), (.notRunning, "not_running"), (.superseded, "superseded"),
            (.unavailable, "unavailable"), (.timeout, "timeout"),
        ]
        for (code, text) in codes { #expect(code.rawValue == text) }
        #expect(ErrorCodeTests.shape(DurabilityError.Code.notRunning) == "not_running")
    }
}
