//! Minimal PDFs written by the tests themselves (no binary fixtures): one
//! page per content stream, with the cross-reference offsets computed.

/// A PDF with one page per text, its xref offsets computed.
pub fn pdf(pages: &[&str]) -> Vec<u8> {
    let streams: Vec<(Vec<u8>, &str)> = pages
        .iter()
        .map(|t| (format!("BT /F1 12 Tf 72 720 Td ({t}) Tj ET").into_bytes(), ""))
        .collect();
    pdf_with_streams(&streams)
}

/// A PDF with one page per (content stream, extra stream dictionary keys).
pub fn pdf_with_streams(streams: &[(Vec<u8>, &str)]) -> Vec<u8> {
    let n = streams.len();
    // Objects: 1 catalog, 2 pages, 3 font, then per page: page, content.
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", 4 + 2 * i)).collect();
    let mut objects: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        format!("<< /Type /Pages /Kids [{}] /Count {n} >>", kids.join(" ")).into_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
    ];
    for (i, (stream, filter)) in streams.iter().enumerate() {
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
                5 + 2 * i
            )
            .into_bytes(),
        );
        let mut obj = format!("<< /Length {}{filter} >>\nstream\n", stream.len()).into_bytes();
        obj.extend_from_slice(stream);
        obj.extend_from_slice(b"\nendstream");
        objects.push(obj);
    }
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, obj) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(obj);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for off in offsets {
        out.extend_from_slice(format!("{off:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}
