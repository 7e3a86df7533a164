extension CompileFailure {
    /// The largest magnitude an integer field of a container may have: 2^53 − 1, the largest integer a
    /// JavaScript number (what GTM reads these fields as) holds exactly.
    static let integerLimit: Double = 9_007_199_254_740_991

    /// Reads an integer field of a container (a tag id, an escape code, a tag reference's flag) without
    /// trapping: `nil` when `value` is missing or not a number; a failure naming the value when it is a
    /// number that is not a whole number within ±(2^53 − 1) (`Int(1e19)` would stop the process).
    static func integer(_ value: Value?, _ what: String, at pointer: String) throws(CompileFailure) -> Int? {
        guard let value, let number = value.jsNumber else { return nil }
        guard number.isFinite, number == number.rounded(), abs(number) <= integerLimit else {
            throw CompileFailure(
                .invalidStructure,
                "\(what) must be a whole number within ±9007199254740991, found '\(value.jsString)'",
                pointer: pointer
            )
        }
        return Int(number)
    }
}
