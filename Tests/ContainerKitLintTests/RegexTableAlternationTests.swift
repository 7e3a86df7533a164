import Testing

@testable import ContainerKitLint

/// Which regex-table keys the `regex_table_alternation` rule reads as alternatives GTM would anchor only at their ends.
struct RegexTableAlternationTests {
    @Test(arguments: ["a|b", "^a|b$", "(a)|b", "a|(b|c)", "[x]|y", "\\\\|a"])
    func aBarOutsideGroupsAndClassesIsAnAlternation(_ key: String) {
        #expect(RegexTableAlternationRule.hasTopLevelAlternation(key), "'\(key)'")
    }

    @Test(arguments: ["(a|b)", "(?:a|b)c", "[a|b]", "a\\|b", "[\\]|]x", "abc", ""])
    func aBarInAGroupAClassOrEscapedIsNot(_ key: String) {
        #expect(!RegexTableAlternationRule.hasTopLevelAlternation(key), "'\(key)'")
    }
}
