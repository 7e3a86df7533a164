// PLACEHOLDER compiler (skeleton): the real one replaces this file.
enum ContainerCompiler {
    static func compile(_ document: SourceDocument, options: LoadOptions) throws(ContainerError) -> Container {
        throw ContainerError(.unknownFormat, "not implemented yet", file: document.file)
    }
}
