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
        let document = try DocumentReader.read(bytes, file: nil, options: LoadOptions(maximumDepth: maximumDepth))
        guard document.syntax == .json else {
            throw ContainerError(.syntax, "expected json text, found a property list")
        }
        self = document.value
    }

    /// The compact JSON text of the value.
    public var jsonText: String { JSONWriter.string(self) }
}
