#include "yaml_dom.hpp"

#include <yaml.h>

#include <algorithm>
#include <map>
#include <memory>

namespace weft::roce {

namespace {

size_t count(const YNode& n) {
  size_t c = 1;
  for (const auto& s : n.seq) c += count(s);
  for (const auto& [k, v] : n.map) c += count(k) + count(v);
  return c;
}

// A plain scalar that YAML's core schema reads as null.
bool plain_null(const yaml_event_t& e) {
  if (e.data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return false;
  const std::string_view s(reinterpret_cast<const char*>(e.data.scalar.value),
                           e.data.scalar.length);
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

}  // namespace

Result<YNode> parse_yaml(std::string_view text, const std::string& source) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser))
    return fail(Errc::kInternal, source + ": cannot start the YAML parser");
  std::unique_ptr<yaml_parser_t, void (*)(yaml_parser_t*)> guard(&parser, yaml_parser_delete);
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()),
                               text.size());
  // Containers being built; a mapping alternates key and value.
  struct Open {
    YNode node;
    bool have_key = false;
    YNode key;
    std::string anchor;
  };
  std::vector<Open> stack;
  std::map<std::string, YNode> anchors;
  YNode root;
  bool have_root = false, done = false;
  // Without aliases a document has fewer nodes than bytes; with them it may not build
  // many more (a "billion laughs" file is refused after a few of its copies).
  const size_t max_nodes = std::max<size_t>(100'000, text.size());
  size_t nodes = 0;
  auto place = [&](YNode n, const std::string& anchor) {
    nodes += n.seq.empty() && n.map.empty() ? 1 : 0;
    if (!anchor.empty()) anchors[anchor] = n;
    if (stack.empty()) {
      if (!have_root) root = std::move(n), have_root = true;
      return;
    }
    Open& top = stack.back();
    if (top.node.kind == YNode::Kind::kSeq) {
      top.node.seq.push_back(std::move(n));
    } else if (!top.have_key) {
      top.key = std::move(n);
      top.have_key = true;
    } else {
      top.node.map.emplace_back(std::move(top.key), std::move(n));
      top.have_key = false;
    }
  };
  while (!done) {
    yaml_event_t e;
    if (!yaml_parser_parse(&parser, &e)) {
      const size_t line = parser.problem_mark.line + 1;
      std::string what = parser.problem ? parser.problem : "unreadable";
      if (parser.context) what = std::string(parser.context) + ": " + what;
      return fail(Errc::kInvalidInput,
                  source + ":" + std::to_string(line) + ": YAML syntax: " + what);
    }
    std::unique_ptr<yaml_event_t, void (*)(yaml_event_t*)> ev(&e, yaml_event_delete);
    const int line = int(e.start_mark.line) + 1;
    auto anchor_of = [](const yaml_char_t* a) {
      return a ? std::string(reinterpret_cast<const char*>(a)) : "";
    };
    switch (e.type) {
      case YAML_SCALAR_EVENT: {
        YNode n;
        n.line = line;
        if (!plain_null(e)) {
          n.kind = YNode::Kind::kScalar;
          n.text.assign(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length);
        }
        place(std::move(n), anchor_of(e.data.scalar.anchor));
        break;
      }
      case YAML_SEQUENCE_START_EVENT:
      case YAML_MAPPING_START_EVENT: {
        Open o;
        o.node.kind = e.type == YAML_SEQUENCE_START_EVENT ? YNode::Kind::kSeq : YNode::Kind::kMap;
        o.node.line = line;
        o.anchor = anchor_of(e.type == YAML_SEQUENCE_START_EVENT ? e.data.sequence_start.anchor
                                                                 : e.data.mapping_start.anchor);
        stack.push_back(std::move(o));
        break;
      }
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: {
        Open o = std::move(stack.back());
        stack.pop_back();
        ++nodes;
        place(std::move(o.node), o.anchor);
        break;
      }
      case YAML_ALIAS_EVENT: {
        const std::string name = anchor_of(e.data.alias.anchor);
        auto it = anchors.find(name);
        if (it == anchors.end())
          return fail(Errc::kInvalidInput, source + ":" + std::to_string(line) + ": alias *" +
                                               name + " names no anchor");
        nodes += count(it->second);
        if (nodes > max_nodes)
          return fail(Errc::kInvalidInput, source + ":" + std::to_string(line) +
                                               ": aliases expand past " +
                                               std::to_string(max_nodes) + " nodes");
        YNode copy = it->second;
        copy.line = line;
        place(std::move(copy), "");
        break;
      }
      case YAML_DOCUMENT_END_EVENT:
        done = have_root;  // the first document only
        break;
      case YAML_STREAM_END_EVENT:
        done = true;
        break;
      default:
        break;
    }
    if (nodes > max_nodes)
      return fail(Errc::kInvalidInput,
                  source + ": more than " + std::to_string(max_nodes) + " YAML nodes");
  }
  return root;
}

}  // namespace weft::roce
