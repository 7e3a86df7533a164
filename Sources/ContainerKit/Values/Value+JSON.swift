extension Value {
    /// Parses JSON text (one document) into a value, with the same parser and limits the loader uses.
    /// - Throws: ``ContainerError`` with code `syntax_error` and the line and column of the problem.
    public init(json text: String, maximumDepth: Int = 256) throws(ContainerError) {
        try self.init(jsonBytes: Array(text.utf8), maximumDepth: maximumDepth)
    }

    /// Parses the UTF-8 bytes of one JSON text into a value (integers stay `.int`, numbers with a fraction
    /// or exponent become `.double`, object keys keep their order).
    /// - Throws: ``ContainerError`` with code `syntax_error` (or `nesting_too_deep`) and the position.
    public init(jsonBytes bytes: [UInt8], maximumDepth: Int = 256) throws(ContainerError) {
        let document: SourceDocument
        do throws(ContainerError) {
            document = try DocumentReader.read(bytes, file: nil, options: LoadOptions(maximumDepth: maximumDepth))
        } catch {
            // The loader's refusal of binary data is about files; for JSON text, say which byte.
            guard DocumentReader.isBinaryRefusal(error) else { throw error }
            throw Self.notJSONText(bytes)
        }
        guard document.syntax == .json else {
            throw ContainerError(.syntax, "expected json text, found a property list")
        }
        self = document.value
    }

    /// The error for bytes that are not text: the first control byte or invalid UTF-8, and where it is.
    static func notJSONText(_ bytes: [UInt8]) -> ContainerError {
        bytes.withUnsafeBufferPointer { buffer in
            var i = 0
            while i < buffer.count {
                let b = buffer[i]
                var problem: String?
                if b < 0x20, b != 0x09, b != 0x0A, b != 0x0D {
                    problem = "control byte \(Self.hex(b)) (not json text)"
                } else if b >= 0x80 {
                    if let length = UTF8Validation.sequenceLength(buffer.baseAddress!, at: i, end: buffer.count) {
                        i += length
                        continue
                    }
                    problem = "invalid utf-8 byte \(Self.hex(b))"
                }
                if let problem {
                    return ContainerError(
                        .syntax,
                        problem,
                        location: SourceText.location(ofOffset: i, in: buffer, origin: 0)
                    )
                }
                i += 1
            }
            return ContainerError(.syntax, "not json text")
        }
    }

    private static func hex(_ b: UInt8) -> String {
        let digits = String(b, radix: 16)
        return "0x" + (digits.count < 2 ? "0" : "") + digits
    }

    /// The compact JSON text of the value.
    public var jsonText: String { JSONWriter.string(self) }
}
