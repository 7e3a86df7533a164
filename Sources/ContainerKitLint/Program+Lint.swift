package import ContainerKit

/// Names and reference walks over the compiled program that several rules share.
extension Program {
    /// `'Name'` of macro `index`, or `macro 3` when it has no name.
    func macroLabel(_ index: Int) -> String {
        if let name = macros[index].name, !name.isEmpty { return "'\(name)'" }
        return "macro \(index) ('\(macros[index].function)')"
    }

    /// `'Name'` of tag `index`, or `tag_id 12` / `tag 3` when it has no name.
    package func tagLabel(_ index: Int) -> String {
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

    /// Whether macro `index` is a built-in variable of an export (or the export's internal `_event`).
    func isExportBuiltIn(_ index: Int) -> Bool {
        let pointer = macros[index].origin.pointer
        return pointer.isEmpty || pointer.hasPrefix("/containerVersion/builtInVariable/")
            || pointer.hasPrefix("/containerVersion/container/enabledBuiltInVariable/")
    }
}

/// Constant folding for lint checks: the value an expression has on every event, when it has one.
extension Program {
    /// The value of `expr` when it is fixed at compile time: a literal; a constant variable (`__c`); a lookup
    /// table (`__smm`) whose input is constant (its matching row or default, when those are constant); a
    /// `{{Name}}` template whose every part is constant (undefined parts render as `undefined`, as GTM
    /// does). Case conversion of a variable's format applies; other value conversions, escapes, regex tables,
    /// data-layer and event reads are not constant (`nil`).
    package func constantValue(of expr: Expr) -> Value? {
        var visiting = Set<Int>()
        return constantValue(of: expr, visiting: &visiting)
    }

    /// The macro an expression is, for messages: `variable 'Name'` (or `macro 3 ('__c')`), `nil` for others.
    func constantOrigin(of expr: Expr) -> String? {
        if case .macro(let m) = expr, m < macros.count { return "variable \(macroLabel(m))" }
        if case .template = expr { return "a template" }
        return nil
    }

    private func constantValue(of expr: Expr, visiting: inout Set<Int>) -> Value? {
        switch expr {
        case .literal(let value):
            return value
        case .template(let parts):
            var text = ""
            for part in parts {
                guard let value = constantValue(of: part, visiting: &visiting) else { return nil }
                text += value.jsString
            }
            return .string(text)
        case .macro(let m):
            guard m < macros.count, visiting.insert(m).inserted else { return nil }
            defer { visiting.remove(m) }
            let macro = macros[m]
            guard macro.format.convertNullTo == nil, macro.format.convertUndefinedTo == nil,
                macro.format.convertTrueTo == nil, macro.format.convertFalseTo == nil
            else { return nil }
            var value: Value
            switch macro.kind {
            case .constant(let inner):
                guard let folded = constantValue(of: inner, visiting: &visiting) else { return nil }
                value = folded
            case .lookupTable(let input, let rows, let defaultValue):
                guard let key = constantValue(of: input, visiting: &visiting) else { return nil }
                var found: Value?
                // Web lookup tables keep a repeated key's last row (see the evaluator).
                for row in undefinedComparesAsText ? Array(rows.reversed()) : rows {
                    guard let rowKey = constantValue(of: row.key, visiting: &visiting) else { return nil }
                    if rowKey.jsString == key.jsString {
                        guard let rowValue = constantValue(of: row.value, visiting: &visiting) else { return nil }
                        found = rowValue
                        break
                    }
                }
                if let found {
                    value = found
                } else if let defaultValue {
                    guard let folded = constantValue(of: defaultValue, visiting: &visiting) else { return nil }
                    value = folded
                } else {
                    value = .undefined
                }
            default:
                return nil
            }
            if case .string(let text) = value {
                switch macro.format.caseConversion {
                case .lowercase?: value = .string(text.lowercased())
                case .uppercase?: value = .string(text.uppercased())
                case nil: break
                }
            }
            return value
        default:
            return nil
        }
    }
}

extension Expr {
    /// The literal string of a constant expression (`nil` for undefined, null and non-constant values).
    package var literalText: String? { TemplateCatalog.literalString(self) }
}
