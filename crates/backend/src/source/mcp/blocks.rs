//! A mounted server's MCP content blocks as toolhost content blocks, so
//! that what the server answered reaches the caller block for block: an
//! image stays an image, a `resource_link` a link, an embedded resource a
//! resource. Block `annotations`, `_meta` and a link's `icons` have no
//! place in a toolhost block and are not carried.

use rmcp::model::{ContentBlock as McpBlock, ResourceContents};
use toolhost_core::ContentBlock;

/// Every block of an MCP result, in order. A block kind this rmcp knows
/// and toolhost does not (none today: the enum is non-exhaustive) is named
/// in a text block rather than dropped silently.
pub fn from_mcp(content: &[McpBlock]) -> Vec<ContentBlock> {
    content.iter().map(block).collect()
}

fn block(block: &McpBlock) -> ContentBlock {
    match block {
        McpBlock::Text(text) => ContentBlock::text(text.text.clone()),
        McpBlock::Image(image) => ContentBlock::image(image.mime_type.clone(), image.data.clone()),
        McpBlock::Audio(audio) => ContentBlock::Audio {
            mime_type: audio.mime_type.clone(),
            data: audio.data.clone(),
        },
        McpBlock::ResourceLink(link) => ContentBlock::ResourceLink {
            uri: link.uri.clone(),
            name: link.name.clone(),
            title: link.title.clone(),
            description: link.description.clone(),
            mime_type: link.mime_type.clone(),
            size: link.size,
        },
        McpBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents {
                uri, mime_type, text, ..
            } => ContentBlock::Resource {
                uri: uri.clone(),
                mime_type: mime_type.clone(),
                text: Some(text.clone()),
                blob: None,
            },
            ResourceContents::BlobResourceContents {
                uri, mime_type, blob, ..
            } => ContentBlock::Resource {
                uri: uri.clone(),
                mime_type: mime_type.clone(),
                text: None,
                blob: Some(blob.clone()),
            },
            #[allow(unreachable_patterns)]
            _ => ContentBlock::text(format!(
                "[an embedded resource this toolhost cannot carry: {}]",
                embedded_uri(block)
            )),
        },
        #[allow(unreachable_patterns)]
        other => ContentBlock::text(format!(
            "[an MCP content block this toolhost cannot carry: {}]",
            serde_json::to_value(other)
                .ok()
                .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string))
                .unwrap_or_default()
        )),
    }
}

/// The `uri` of an embedded resource of a kind this toolhost does not know.
fn embedded_uri(block: &McpBlock) -> String {
    serde_json::to_value(block)
        .ok()
        .and_then(|v| v["resource"]["uri"].as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The text of the text blocks, joined by newlines.
pub fn joined_text(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}
