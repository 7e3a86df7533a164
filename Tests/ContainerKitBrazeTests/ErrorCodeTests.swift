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
