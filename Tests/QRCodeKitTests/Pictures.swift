import QRCodeKit
import ToolTestSupport

extension Picture {
    /// `code` with a light border of `quietZone` modules and, when the height is odd, a light
    /// row below: what `terminalText(colours:quietZone:)` should draw.
    init(_ code: QRCode, quietZone: Int) {
        let side = code.size + 2 * quietZone
        let height = side + side % 2
        self.init(rows: (0..<height).map { row in
            (0..<side).map { column in
                let r = row - quietZone
                let c = column - quietZone
                return (0..<code.size).contains(r) && (0..<code.size).contains(c) && code.isDark(row: r, column: c)
            }
        })
    }
}
