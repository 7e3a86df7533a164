/// Names and reference walks over the compiled program that several rules share.
extension Program {
    /// `'Name'` of macro `index`, or `macro 3` when it has no name.
    func macroLabel(_ index: Int) -> String {
        if let name = macros[index].name, !name.isEmpty { return "'\(name)'" }
        return "macro \(index) ('\(macros[index].function)')"
    }

    /// `'Name'` of tag `index`, or `tag_id 12` / `tag 3` when it has no name.
    func tagLabel(_ index: Int) -> String {
        let tag = tags[index]
        if let name = tag.name, !name.isEmpty { return "'\(name)'" }
        if let id = tag.tagID { return "tag_id \(id) ('\(tag.function)')" }
        return "tag \(index) ('\(tag.function)')"
    }

    /// `trigger 'Name'` of rule `index` (exports name rules after triggers), or `rule 3`.
    func ruleLabel(_ index: Int) -> String {
        if let name = rules[index].name, !name.isEmpty { return "trigger '\(name)'" }
        return "rule \(index)"
    }

    /// Calls `body` with every macro index macro `index` reads (its parameters and value formats).
    func forEachReference(ofMacro index: Int, _ body: (Int) -> Void) {
        let macro = macros[index]
        for parameter in macro.parameters { parameter.value.forEachMacro(body) }
        for expr in [
            macro.format.convertNullTo, macro.format.convertUndefinedTo, macro.format.convertTrueTo,
            macro.format.convertFalseTo,
        ] {
            expr?.forEachMacro(body)
        }
    }

    /// Whether macro `index` is a built-in variable of an export (or the export's internal `_event`).
    func isExportBuiltIn(_ index: Int) -> Bool {
        let pointer = macros[index].origin.pointer
        return pointer.isEmpty || pointer.hasPrefix("/containerVersion/builtInVariable/")
    }
}

extension Expr {
    /// The literal string of a constant expression (`nil` for undefined, null and non-constant values).
    var literalText: String? { TemplateCatalog.literalString(self) }
}
