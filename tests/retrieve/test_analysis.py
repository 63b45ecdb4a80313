from citewise.retrieve.analysis import analyze, tokenize


def test_identifiers_match_their_words():
    whole = set(tokenize("invalidateMetadataRuntime"))
    words = set(tokenize("invalidate metadata runtime"))
    assert words <= whole
    assert tokenize("parse_invoice_total") [:3] == tokenize("parse invoice total")


def test_identifier_tokens_are_parts_then_compound_components_then_the_whole():
    assert tokenize("invalidateMetadataRuntime") == [
        "invalid", "metadata", "runtim", "invalidatemetadataruntim"]
    assert tokenize("HTTPServerError") == ["http", "server", "error", "httpservererror"]
    # a dotted path keeps each compound component whole, so the bare name matches it
    assert tokenize("cache.invalidateMetadataRuntime()") == [
        "cach", "invalid", "metadata", "runtim", "invalidatemetadataruntim",
        "cache_invalidatemetadataruntim"]
    assert tokenize("os.path.join") == ["os", "path", "join", "os_path_join"]
    assert tokenize("MetadataCache.Stats") == [
        "metadata", "cach", "stat", "metadatacach", "metadatacache_stat"]


def test_any_script_keeps_its_tokens():
    assert tokenize("Кітапхананың жұмыс уақыты") != []
    assert "ثلاثين" in tokenize("خلال ثلاثين يومًا")
    assert tokenize("退货期限是多久") == ["退货", "期限", "是", "多久"]


def test_case_folding_and_yo_folding():
    assert tokenize("ЁЛКА") == tokenize("елка")
    assert tokenize("ҚАЗАҚ") == tokenize("қазақ")


def test_punctuation_only_and_emoji_give_no_tokens():
    for text in ["", "   ", "?", "🙂", "...!!!", "\u200b\u200b"]:
        assert tokenize(text) == []


def test_english_stemming_and_stop_words():
    assert tokenize("The cells were running") == ["cell", "were", "run"]


def test_analyzed_text_is_space_joined_tokens():
    assert analyze("Red apples, red!") == "red appl red"
