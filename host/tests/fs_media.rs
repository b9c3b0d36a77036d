//! read_file on images, PDFs and Jupyter notebooks (issue #18 item 3),
//! through the real binary and the real filesystem cdylib. Every fixture is
//! generated here: images with the `image` crate, PDFs written by hand (and
//! compressed with flate2 for the bomb), notebooks as JSON.

mod common;

use std::io::{Cursor, Write};
use std::path::PathBuf;

use base64::Engine;
use common::pdf::{pdf, pdf_with_streams};
use common::{Called, Env};
use image::{DynamicImage, ImageFormat, RgbImage, RgbaImage};
use serde_json::{json, Value};

struct Tree {
    env: Env,
}

impl Tree {
    fn new() -> Tree {
        let env = Env::new("");
        env.set_plan(
            "[host]\nworking_dir = \"project\"\ndefault_timeout_secs = 60\n\n[[tools]]\nmodule = \"filesystem\"\n",
        );
        std::fs::create_dir_all(env.path().join("project")).unwrap();
        Tree { env }
    }

    fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.env.path().join("project").join(rel);
        std::fs::write(&path, content).unwrap();
        path
    }

    fn read(&self, input: Value) -> Called {
        self.env.call("read_file", input)
    }
}

fn text(called: &Called) -> String {
    called.assert_success().as_str().unwrap_or_default().to_string()
}

/// The decoded images of a result's content blocks, with their MIME types.
fn images(called: &Called) -> Vec<(String, Vec<u8>)> {
    called.result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "image")
        .map(|b| {
            let data = base64::engine::general_purpose::STANDARD
                .decode(b["data"].as_str().unwrap_or_default())
                .expect("image data is base64");
            (b["mime_type"].as_str().unwrap_or_default().to_string(), data)
        })
        .collect()
}

fn encoded(image: &DynamicImage, format: ImageFormat) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, format).unwrap();
    out.into_inner()
}

/// A noisy picture (so it does not compress to nothing).
fn picture(w: u32, h: u32) -> DynamicImage {
    let mut seed = 0x2545_f491u32;
    DynamicImage::ImageRgb8(RgbImage::from_fn(w, h, |x, y| {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        image::Rgb([(x % 256) as u8, (y % 256) as u8, (seed & 0xff) as u8])
    }))
}

#[test]
fn small_images_come_back_as_they_are_detected_by_content() {
    let tree = Tree::new();
    let png = encoded(&picture(64, 32), ImageFormat::Png);
    // Named .txt: detected by its bytes, not its name.
    tree.write("shot.txt", &png);
    let called = tree.read(json!({"file_path": "shot.txt"}));
    let out = text(&called);
    assert!(
        out.contains("PNG image, 64×32") && out.contains("image content block"),
        "{out}"
    );
    assert_eq!(images(&called), vec![("image/png".to_string(), png)]);
    let gif = encoded(
        &DynamicImage::ImageRgba8(RgbaImage::new(10, 10)),
        ImageFormat::Gif,
    );
    tree.write("a.gif", &gif);
    let called = tree.read(json!({"file_path": "a.gif"}));
    assert_eq!(images(&called), vec![("image/gif".to_string(), gif)]);
    let webp = encoded(&picture(20, 20), ImageFormat::WebP);
    tree.write("a.webp", &webp);
    let called = tree.read(json!({"file_path": "a.webp"}));
    assert_eq!(images(&called), vec![("image/webp".to_string(), webp)]);
    // A text file named .png is read as text.
    tree.write("fake.png", "just text\n");
    let called = tree.read(json!({"file_path": "fake.png"}));
    assert!(text(&called).contains("just text"));
    assert!(images(&called).is_empty());
}

#[test]
fn large_images_are_downscaled_under_the_caps() {
    let tree = Tree::new();
    let jpeg = encoded(&picture(3000, 1000), ImageFormat::Jpeg);
    tree.write("wide.jpg", &jpeg);
    let called = tree.read(json!({"file_path": "wide.jpg"}));
    let out = text(&called);
    assert!(
        out.contains("3000×1000") && out.contains("downscaled to 1568×523"),
        "{out}"
    );
    let got = images(&called);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, "image/jpeg");
    assert!(got[0].1.len() <= 1024 * 1024);
    let back = image::load_from_memory(&got[0].1).unwrap();
    assert_eq!((back.width(), back.height()), (1568, 523));
    // A PNG over the byte cap but within the edge is re-encoded smaller.
    let png = encoded(&picture(1500, 1500), ImageFormat::Png);
    assert!(png.len() > 1024 * 1024, "the fixture must be over the cap");
    tree.write("big.png", &png);
    let called = tree.read(json!({"file_path": "big.png"}));
    let got = images(&called);
    assert_eq!(got.len(), 1, "{}", called.result);
    assert!(got[0].1.len() <= 1024 * 1024);
}

/// CRC-32 (IEEE) for hand-made PNG chunks.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn hostile_images_are_clear_errors() {
    let tree = Tree::new();
    // A PNG whose header claims 100,000 × 100,000 pixels.
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = b"IHDR".to_vec();
    ihdr.extend_from_slice(&100_000u32.to_be_bytes());
    ihdr.extend_from_slice(&100_000u32.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    png.extend_from_slice(&13u32.to_be_bytes());
    png.extend_from_slice(&ihdr);
    png.extend_from_slice(&crc32(&ihdr).to_be_bytes());
    png.extend_from_slice(&[0, 0, 0, 0]);
    png.extend_from_slice(b"IEND");
    png.extend_from_slice(&crc32(b"IEND").to_be_bytes());
    tree.write("huge.png", &png);
    let called = tree.read(json!({"file_path": "huge.png"}));
    assert_eq!(
        called.result["error"]["code"], "image_too_large",
        "{}",
        called.result
    );
    called.assert_says("16384");
    // A truncated PNG (a truncated JPEG decodes, grey where data is missing).
    let whole = encoded(&picture(200, 200), ImageFormat::Png);
    tree.write("cut.png", &whole[..whole.len() / 3]);
    let called = tree.read(json!({"file_path": "cut.png"}));
    assert_eq!(
        called.result["error"]["code"], "malformed_file",
        "{}",
        called.result
    );
    assert!(called.result.get("content").is_none(), "{}", called.result);
}

#[test]
fn pdfs_read_as_text_by_page() {
    let tree = Tree::new();
    tree.write("doc.pdf", pdf(&["Hello first page", "Second words", "Third end"]));
    let out = text(&tree.read(json!({"file_path": "doc.pdf"})));
    assert!(out.contains("[page 1 of 3]\nHello first page"), "{out}");
    assert!(out.contains("[page 3 of 3]\nThird end"), "{out}");
    let out = text(&tree.read(json!({"file_path": "doc.pdf", "pages": "2"})));
    assert!(
        out.contains("Second words") && !out.contains("Hello") && !out.contains("Third"),
        "{out}"
    );
    let out = text(&tree.read(json!({"file_path": "doc.pdf", "pages": "2-3"})));
    assert!(
        out.contains("Second words") && out.contains("Third end") && !out.contains("Hello"),
        "{out}"
    );
    let called = tree.read(json!({"file_path": "doc.pdf", "pages": "7"}));
    assert_eq!(called.status(), "validation_error", "{}", called.result);
    called.assert_says("3 page");
    let called = tree.read(json!({"file_path": "doc.pdf", "pages": "two"}));
    assert_eq!(called.status(), "validation_error");
    tree.write("plain.txt", "text\n");
    let called = tree.read(json!({"file_path": "plain.txt", "pages": "1"}));
    assert_eq!(called.status(), "validation_error");
    called.assert_says("PDF files only");
}

#[test]
fn hostile_pdfs_end_in_clear_errors_or_bounded_results() {
    let tree = Tree::new();
    // Garbage after the header, and a broken xref.
    tree.write("junk.pdf", b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 9 0 R\nxref\n0 zz\ntrailer << /Root 1 0 R >>\nstartxref\n99999\n%%EOF\n");
    let called = tree.read(json!({"file_path": "junk.pdf"}));
    assert_eq!(called.status(), "error", "{}", called.result);
    assert_eq!(
        called.result["error"]["code"], "malformed_file",
        "{}",
        called.result
    );
    // A compression bomb: 64 MiB of content in a page stream of a few KiB.
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let chunk = vec![b' '; 1 << 20];
    for _ in 0..64 {
        z.write_all(&chunk).unwrap();
    }
    let bomb = z.finish().unwrap();
    assert!(bomb.len() < 1 << 20);
    let normal = b"BT /F1 12 Tf 72 720 Td (Safe page) Tj ET".to_vec();
    tree.write(
        "bomb.pdf",
        pdf_with_streams(&[(normal, ""), (bomb, " /Filter /FlateDecode")]).as_slice(),
    );
    let called = tree.read(json!({"file_path": "bomb.pdf"}));
    // Page 1 reads; page 2 is reported unextractable (over the 16 MiB
    // inflate bound) instead of being inflated to 64 MiB.
    let out = text(&called);
    assert!(out.len() < 10_000, "{}", out.len());
    assert!(
        out.contains("[page 1 of 2]\nSafe page\n[page 2 of 2]\n[the text of this page cannot be extracted"),
        "{out}"
    );
}

fn notebook(cells: Vec<Value>) -> String {
    json!({"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"language": "python", "name": "python3"}}, "cells": cells}).to_string()
}

#[test]
fn notebooks_read_as_cells_with_outputs() {
    let tree = Tree::new();
    let png = encoded(&picture(40, 30), ImageFormat::Png);
    let b64 = base64::engine::general_purpose::STANDARD.encode(&png);
    tree.write(
        "nb.ipynb",
        notebook(vec![
            json!({"cell_type": "markdown", "metadata": {}, "source": ["# Analysis\n", "Some notes"]}),
            json!({"cell_type": "code", "execution_count": 1, "metadata": {}, "source": ["x = 41\n", "print(x + 1)"],
                   "outputs": [{"output_type": "stream", "name": "stdout", "text": ["42\n"]}]}),
            json!({"cell_type": "code", "execution_count": 2, "metadata": {}, "source": "plot()",
                   "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"image/png": b64, "text/plain": ["<Figure>"]}},
                               {"output_type": "execute_result", "execution_count": 2, "metadata": {}, "data": {"text/plain": ["'done'"]}}]}),
            json!({"cell_type": "code", "execution_count": 3, "metadata": {}, "source": "1/0",
                   "outputs": [{"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero", "traceback": ["\u{1b}[0;31mZeroDivisionError\u{1b}[0m: division by zero"]}]}),
        ]),
    );
    let called = tree.read(json!({"file_path": "nb.ipynb"}));
    let out = text(&called);
    for want in [
        "[cell 1 (markdown)]\n# Analysis\nSome notes\n",
        "[cell 2 (code, python, execution_count 1)]\nx = 41\nprint(x + 1)\n[output: stdout]\n42\n",
        "[output: image/png image]",
        "[output: execute_result]\n'done'\n",
        "[output: error ZeroDivisionError: division by zero]\nZeroDivisionError: division by zero\n",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    assert_eq!(images(&called), vec![("image/png".to_string(), png)]);
    // Not JSON: a clear error.
    tree.write("bad.ipynb", "{ not json");
    let called = tree.read(json!({"file_path": "bad.ipynb"}));
    assert_eq!(
        called.result["error"]["code"], "malformed_file",
        "{}",
        called.result
    );
}

#[test]
fn a_notebook_with_100k_cells_is_paged() {
    let tree = Tree::new();
    let cells: Vec<Value> = (0..100_000)
        .map(|i| json!({"cell_type": "code", "execution_count": i, "metadata": {}, "source": format!("print({i})"), "outputs": [{"output_type": "stream", "name": "stdout", "text": format!("{i}\n")}]}))
        .collect();
    tree.write("many.ipynb", notebook(cells));
    let called = tree.read(json!({"file_path": "many.ipynb"}));
    let out = text(&called);
    assert!(out.len() <= 90 * 1024, "{}", out.len());
    assert!(
        out.contains("of the notebook's 100000 cells; continue with offset=2001"),
        "{}",
        &out[out.len() - 300..]
    );
    let out = text(&tree.read(json!({"file_path": "many.ipynb", "offset": 399_997, "limit": 10})));
    assert_eq!(
        out,
        "[cell 100000 (code, python, execution_count 99999)]\nprint(99999)\n[output: stdout]\n99999\n"
    );
}

#[test]
fn notebook_image_outputs_are_capped_per_call() {
    let tree = Tree::new();
    let png = encoded(&picture(16, 16), ImageFormat::Png);
    let b64 = base64::engine::general_purpose::STANDARD.encode(&png);
    let cells: Vec<Value> = (0..10)
        .map(|i| json!({"cell_type": "code", "execution_count": i, "metadata": {}, "source": "show()",
                        "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"image/png": b64}}]}))
        .collect();
    tree.write("pics.ipynb", notebook(cells));
    let called = tree.read(json!({"file_path": "pics.ipynb"}));
    let out = text(&called);
    assert_eq!(images(&called).len(), 8, "{out}");
    assert!(out.contains("2 more image output(s) not attached"), "{out}");
    // Paging on reaches the rest.
    let called = tree.read(json!({"file_path": "pics.ipynb", "offset": 25}));
    assert_eq!(images(&called).len(), 2, "{}", text(&called));
}
