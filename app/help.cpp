#include "help.hpp"

#include <sstream>

namespace weft::app {

void print_help(std::ostream& os, const Help& h,
                const boost::program_options::options_description* o) {
  os << "weft " << h.name << " - " << h.summary << "\n\nUsage:\n";
  std::istringstream syn{std::string(h.synopsis)};
  for (std::string line; std::getline(syn, line);) os << "  " << line << "\n";
  os << "\n" << h.description << "\n";
  if (o && !o->options().empty()) os << "\n" << *o;
  if (!h.sections.empty()) os << "\n" << h.sections << "\n";
}

namespace {

// Text as roff: backslashes escaped, and a line that starts with '.' or '\'' is not a
// request.
std::string roff(std::string_view text) {
  std::string out;
  bool line_start = true;
  for (char c : text) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    if (c == '\\')
      out += "\\e";
    else
      out += c;
    line_start = c == '\n';
  }
  return out;
}

}  // namespace

std::string man_include(const std::vector<ManEntry>& commands) {
  std::ostringstream os;
  os << "[FILES]\n"
        ".TP\n/etc/weft/weft.conf\nThe options, in opensm.conf syntax, every one commented out at "
        "its default (weft config template writes it).\n"
        ".TP\n/var/lib/weft/guid2lid\nLIDs by port GUID (OpenSM's guid2lid format); weft@.service "
        "keeps one state directory per port GUID, /var/lib/weft/GUID.\n"
        ".TP\n/var/lib/weft/lock\nHeld by the SM that uses the state directory, with its pid.\n"
        "[ENVIRONMENT]\n"
        ".TP\nGLIBC_TUNABLES\nweft sm, sim and route run themselves again, once, with "
        "glibc.malloc.hugetlb=1 added, where the kernel gives transparent huge pages to who asks "
        "(/sys/kernel/mm/transparent_hugepage/enabled: madvise): glibc's malloc then asks, and "
        "routing the largest fabrics takes less CPU. Not when GLIBC_TUNABLES already names "
        "glibc.malloc.hugetlb (=0 turns this off), LD_PRELOAD is set, or weft runs with "
        "privileges it was given (setuid, file capabilities). They also keep the memory they "
        "free for the next sweep (one malloc arena, no block mapped apart, no trim), each but "
        "where the user sets it (GLIBC_TUNABLES' glibc.malloc.arena_max, mmap_max, "
        "mmap_threshold or trim_threshold, or MALLOC_ARENA_MAX and its kin); with "
        "glibc.malloc.hugetlb=2 large blocks are still mapped apart. weft route --json says "
        "which it kept (malloc_kept).\n"
        "[SEE ALSO]\n"
        ".BR opensm (8),\n.BR ibsim (1),\n.BR ibnetdiscover (8),\n.BR smpquery (8),\n"
        ".BR saquery (8),\n.BR systemd.exec (5)\n";
  os << "[COMMANDS]\n";
  for (const auto& c : commands) {
    std::ostringstream page;
    print_help(page, *c.help, &c.options);
    os << ".SS \"weft " << c.help->name << "\"\n.nf\n" << roff(page.str()) << ".fi\n";
  }
  return os.str();
}

}  // namespace weft::app
