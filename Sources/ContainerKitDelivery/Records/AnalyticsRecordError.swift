/// Why a JSON text could not be read back as an ``AnalyticsRecord``: a ``DeliveryError`` (the module's one
/// error type) with one of the codes below.
public typealias AnalyticsRecordError = DeliveryError

extension DeliveryError.Code {
    /// The text is not JSON.
    public static let malformedJSON = DeliveryError.Code(rawValue: "malformed_json")
    /// The JSON is not a record: a member is missing or has the wrong type.
    public static let invalidRecord = DeliveryError.Code(rawValue: "invalid_record")
}
