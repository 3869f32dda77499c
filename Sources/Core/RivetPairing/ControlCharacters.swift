/// True if `scalar` is a C0 or C1 control character or DEL: text that could move a terminal's
/// cursor or start an escape sequence when shown.
func isControl(_ scalar: Unicode.Scalar) -> Bool {
    scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
}
