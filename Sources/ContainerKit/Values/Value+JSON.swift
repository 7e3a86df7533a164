extension Value {
    /// Parses JSON text (one document) into a value, with the same parser and limits the loader uses.
    /// - Throws: ``ContainerError`` with code `syntax_error` and the line and column of the problem.
    public init(json text: String, maximumDepth: Int = 256) throws(ContainerError) {
        let document = try DocumentReader.read(
            Array(text.utf8),
            file: nil,
            options: LoadOptions(maximumDepth: maximumDepth)
        )
        guard document.syntax == .json else {
            throw ContainerError(.syntax, "expected json text, found a property list")
        }
        self = document.value
    }

    /// The compact JSON text of the value.
    public var jsonText: String { JSONWriter.string(self) }
}
