#| block #| nested |# |# (a #;(b) . (c "s\n" -1 [d]))
