// The grammar behind the built-in corpus (builtin_corpus.h): SentenceGenerator writes tagged
// sentences, one at a time, from a seed; generate_corpus splits its stream into train, dev and test.
//
// How the grammar keeps every tag decidable from context. The ambiguous words and the cue that
// settles each (a human reader uses the same cues):
//
//   noun or verb (watch book light saw fish ...)  NOUN right after a determiner, possessive,
//       number or adjective, or after "of"/a verb as a bare object; VERB after a subject, an
//       auxiliary, "to", "not", a frequency adverb, a relative pronoun, "and" joining verb phrases,
//       or first in an imperative. Noun-verb words never appear as bare subjects, so a sentence
//       that starts with one is an imperative.
//   adjective or verb (open clean empty dry warm clear free close)  ADJ before a noun or after a
//       form of "be"; VERB only as a transitive verb, always followed by its object.
//   can         AUX before a verb, "not", "be" or (in a question) a subject; VERB before its
//               object; NOUN after a determiner.
//   have / do   AUX before a participle, "not", or a subject in a question; VERB before an object.
//   be          VERB in existential "there is"/"is there", AUX everywhere else.
//   that        DET before a singular noun; SCONJ after a verb of thinking, before a clause;
//               PRON after a noun (relative) and as a demonstrative subject or object.
//   this these those which what   DET before a noun; PRON otherwise.
//   like        VERB where a verb goes (see above); ADP after a verb, its object, or "be".
//   to          PART before a verb; ADP before a noun phrase.
//   down up around round over     ADP before a noun phrase; ADV otherwise.
//   about       ADV before a number; ADP before a noun phrase.
//   after before since until      SCONJ when a clause (subject and verb) follows; ADP otherwise.
//   as          ADV before an adjective or adverb; ADP after "as ... as"; SCONJ before a clause.
//   when        ADV opening a question; SCONJ opening a clause.
//   both        CCONJ in "both X and Y"; DET otherwise.
//   fast hard late early high     ADJ in a noun phrase or after "be"; ADV after a verb.
//   still only  ADJ after a determiner (and "be": still); ADV before a verb.
//   back round  ADJ before a noun; ADV after a verb (and "be": back); ADP before a noun phrase
//               (round).
//   well        NOUN after a determiner, ADJ after "be", ADV after a verb, INTJ (see below).
//   no right well please  INTJ first in a sentence before a comma (please: before an imperative,
//               or after one at the end); otherwise DET, ADJ, ADJ/ADV/NOUN and VERB.
//   's          AUX after a pronoun ("it 's big"); PART after a noun or name (possessive).
//   while       SCONJ before a clause; NOUN in "a while".
// To keep these cues local, some constructions are left out: compound nouns, bare noun-verb
// plurals as subjects, small clauses ("i saw her watch the birds"), double objects, object
// "her" (it is only possessive here, see kObjectPronouns), and prepositional phrases inside
// relative clauses.
#include <algorithm>
#include <filesystem>
#include <iterator>
#include <string>
#include <string_view>

#include "data/builtin_corpus.h"
#include "data/builtin_lexicon.h"
#include "tensor/error.h"
#include "tensor/random.h"

namespace qkv::data {
namespace {

using namespace lexicon;

bool starts_with_vowel(const std::string& word) {
  return !word.empty() && std::string_view("aeiou").find(word[0]) != std::string_view::npos;
}

// ---- The grammar ------------------------------------------------------------------------------

// How often the grammar reaches for a noun-verb word, and how often for an echo: the spelling
// just used, again in a new role ("i saw a saw", "they can can the can", "the fish fish").
constexpr double kNounVerbShareOfVerbs = 0.65;
constexpr double kNounVerbShareOfThings = 0.6;
constexpr double kNounVerbShareOfAnimates = 0.3;
constexpr double kEcho = 0.3;

constexpr unsigned kAnyFrame = ~0u;

// Subject agreement: "i am / run", "he is / runs", "they are / run".
enum class Agr { first_singular, third_singular, other };
enum class Form { base, s, past, participle, ing };
enum class Number { singular, plural, any };
enum class Head { animate, thing, any, time };
// Where a verb phrase stands. Inside a relative clause it takes only short complements, so that
// the main clause's verb after it is never mistaken for part of it.
enum class Where { main, relative };

const char* form_of(const Verb& v, Form f) {
  switch (f) {
    case Form::base:
      return v.base;
    case Form::s:
      return v.s;
    case Form::past:
      return v.past;
    case Form::participle:
      return v.participle;
    case Form::ing:
      return v.ing;
  }
  return v.base;
}

Form finite(Agr agr, bool past) {
  if (past) return Form::past;
  return agr == Agr::third_singular ? Form::s : Form::base;
}

const char* be(Agr agr, bool past) {
  if (past) return agr == Agr::other ? "were" : "was";
  return agr == Agr::first_singular ? "am" : agr == Agr::third_singular ? "is" : "are";
}

const char* do_form(Agr agr, bool past) { return past ? "did" : agr == Agr::third_singular ? "does" : "do"; }

const char* have_form(Agr agr, bool past) {
  return past ? "had" : agr == Agr::third_singular ? "has" : "have";
}

// The noun-verb entry spelled `word` as a noun (singular or plural), if any.
const NounVerb* noun_spelled(const std::string& word) {
  for (const NounVerb& nv : kNounVerbs)
    if (word == nv.noun.sg || (nv.noun.pl != nullptr && word == nv.noun.pl)) return &nv;
  return nullptr;
}

struct Subject {
  Agr agr = Agr::third_singular;
  const NounVerb* head = nullptr;  // an animate noun-verb head, for "the fish fish"
  bool contracts = false;          // he, she, it: "'s" may stand for "is"
};

// A chosen noun, before its determiner is written.
struct NounChoice {
  std::string word;
  bool plural = false;
  bool mass = false;
  bool person = false;           // takes "who" as relative pronoun
  bool thing = false;            // may be "the back door", "a round table"
  bool time = false;             // "the war", "this morning"
  const NounVerb* nv = nullptr;  // the noun-verb entry, when the noun is one
};

// What may come with a noun phrase.
struct NpOptions {
  bool modifier = false;  // a prepositional phrase or relative clause after the noun
  bool about = false;     // "about" before a number: "about ten dogs"
  bool both = true;       // "both" as determiner; never inside a coordination ("both X and Y")
};

class SentenceGenerator {
 public:
  explicit SentenceGenerator(uint64_t seed) : rng_(seed) {}

  TaggedSentence sentence() {
    do {
      out_ = {};
      depth_ = 0;
      body();
    } while (out_.words.size() < 3 || out_.words.size() > 40);
    // "a" becomes "an" before a vowel, which is only known once the next word is.
    for (size_t i = 0; i + 1 < out_.words.size(); ++i)
      if (out_.words[i] == "a" && starts_with_vowel(out_.words[i + 1])) out_.words[i] = "an";
    return std::move(out_);
  }

 private:
  qkv::Generator rng_;
  TaggedSentence out_;
  int depth_ = 0;  // clauses and phrases nest at most two levels below the main clause

  void add(const std::string& word, const char* tag) {
    out_.words.push_back(word);
    out_.tags.push_back(tag);
  }
  bool chance(double p) { return rng_.next_chance(p); }
  double uniform() { return rng_.next_uniform(); }
  template <class T, size_t N>
  const T& pick(const T (&items)[N]) {
    return items[rng_.next_below(N)];
  }
  bool may_nest() const { return depth_ < 2; }
  template <class F>
  void nested(F f) {
    ++depth_;
    f();
    --depth_;
  }

  // -- sentences --

  void body() {
    const double r = uniform();
    if (r < 0.26) {
      statement();
    } else if (r < 0.30) {
      echo_sentence();
    } else if (r < 0.37) {
      interjection();
      statement();
    } else if (r < 0.50) {
      imperative();
    } else if (r < 0.58) {
      clause(Where::main);
      add(",", PUNCT);
      const char* conjunctions[] = {"and", "but", "or"};
      add(pick(conjunctions), CCONJ);
      clause(Where::main);
      if (chance(0.3)) subordinate_clause();
      add(".", PUNCT);
    } else if (r < 0.68) {
      subordinated();
    } else if (r < 0.78) {
      yes_no_question();
    } else if (r < 0.85) {
      wh_question();
    } else if (r < 0.91) {
      existential();
      add(".", PUNCT);
    } else if (r < 0.93) {
      numbers();
    } else {
      demonstrative();
    }
  }

  void statement() {
    clause(Where::main);
    add(".", PUNCT);
  }

  // The seed's example and its kin, on purpose: "i saw a saw .", "he can can the can .",
  // "the fish fish .", "the guards guard the guard ."
  void echo_sentence() {
    const double r = uniform();
    if (r < 0.4) {
      subject(random_agr(), true);
      add("saw", VERB);
      add(chance(0.5) ? "a" : "the", DET);
      add("saw", NOUN);
    } else if (r < 0.7) {
      subject(random_agr(), true);
      add("can", AUX);
      add("can", VERB);
      add("the", DET);
      add(chance(0.7) ? "can" : "cans", NOUN);
    } else {
      const NounVerb* nv;
      do nv = &pick(kNounVerbs);
      while (!nv->animate);
      add("the", DET);
      add(nv->noun.pl, NOUN);
      add(nv->verb.base, VERB);
      if (nv->verb.frames & kTransitive) {
        add("the", DET);
        add(nv->noun.sg, NOUN);
      }
    }
    if (chance(0.3)) place_phrase();
    add(".", PUNCT);
  }

  void interjection() {
    add(pick(kInterjections), INTJ);
    add(",", PUNCT);
  }

  // "after the dog ran , the cat slept ." or "the cat slept after the dog ran ."
  void subordinated() {
    if (chance(0.4)) {
      subordinate_clause();
      add(",", PUNCT);
      clause(Where::main);
    } else {
      clause(Where::main);
      subordinate_clause();
    }
    add(".", PUNCT);
  }

  void subordinate_clause() {
    add(pick(kSubordinators), SCONJ);
    nested([&] { clause(Where::main); });
  }

  // "book a flight .", "please watch the light and close the door !", "do not open the box ."
  void imperative() {
    const double r = uniform();
    if (r < 0.25) {
      add("please", INTJ);
    } else if (r < 0.35) {
      interjection();
    } else if (r < 0.42) {
      add(chance(0.5) ? "never" : "always", ADV);
    } else if (r < 0.55) {
      add("do", AUX);
      add("not", PART);
    }
    const unsigned frames = kIntransitive | kTransitive | kMotion | kToInfinitive;
    verb_phrase(pick_verb(frames), Form::base, Where::main);
    if (may_nest() && chance(0.2)) {
      add("and", CCONJ);
      verb_phrase(pick_verb(frames), Form::base, Where::main);
    }
    if (chance(0.1)) {
      add(",", PUNCT);
      add("please", INTJ);
    }
    add(chance(0.2) ? "!" : ".", PUNCT);
  }

  // "does the dog like fish ?", "can the fish fish ?", "is there a cat in the garden ?"
  void yes_no_question() {
    const Agr agr = chance(0.5) ? Agr::third_singular : Agr::other;
    const bool past = chance(0.35);
    const double r = uniform();
    if (r < 0.35) {
      add(do_form(agr, past), AUX);
      const Subject s = subject(agr, true);
      verb_phrase(verb_for(s, kAnyFrame), Form::base, Where::main);
    } else if (r < 0.6) {
      add(pick(kModals), AUX);
      const Subject s = subject(agr, true);
      verb_phrase(verb_for(s, kAnyFrame), Form::base, Where::main);
    } else if (r < 0.7) {
      add(have_form(agr, false), AUX);
      const Subject s = subject(agr, true);
      verb_phrase(verb_for(s, kAnyFrame), Form::participle, Where::main);
    } else if (r < 0.85) {
      add(be(agr, past), AUX);
      const Subject s = subject(agr, true);
      be_complement(s, Where::main);
    } else {
      // Existential "be" is a VERB in UD English; "there" is its PRON subject.
      add(be(agr, past), VERB);
      add("there", PRON);
      noun_phrase(agr == Agr::other ? Number::plural : Number::singular, Head::any, {});
      if (chance(0.5)) place_phrase();
    }
    add("?", PUNCT);
  }

  // "what did she see ?", "which book did he read ?", "who saw the dog ?", "where is the cat ?"
  void wh_question() {
    const Agr agr = chance(0.5) ? Agr::third_singular : Agr::other;
    const bool past = chance(0.4);
    const char* wh_adverbs[] = {"where", "when", "why", "how"};
    const double r = uniform();
    if (r < 0.45) {
      if (r < 0.3) {
        add("what", PRON);
      } else {
        add(chance(0.5) ? "which" : "what", DET);
        add(choose_noun(Head::thing, Number::any, true).word, NOUN);
      }
      add(do_form(agr, past), AUX);
      subject(agr, true);
      // "what did he do ?": the main verb "do" after the auxiliary "did".
      add(chance(0.15) ? "do" : pick_verb(kTransitive).base, VERB);
    } else if (r < 0.6) {
      add("who", PRON);
      predicate({Agr::third_singular}, Where::main, false);
    } else if (r < 0.8) {
      add(pick(wh_adverbs), ADV);
      add(do_form(agr, past), AUX);
      const Subject s = subject(agr, true);
      verb_phrase(verb_for(s, kIntransitive | kTransitive | kMotion), Form::base, Where::main);
    } else {
      add(pick(wh_adverbs), ADV);
      add(be(agr, past), AUX);
      subject(agr, false);
      if (chance(0.4)) adjective_predicate();
    }
    add("?", PUNCT);
  }

  // "there is a dog in the garden", "there were two cats that slept"
  void existential() {
    const bool plural = chance(0.45);
    add("there", PRON);
    add(be(plural ? Agr::other : Agr::third_singular, chance(0.35)), VERB);
    noun_phrase(plural ? Number::plural : Number::singular, Head::any, {.modifier = true});
    if (chance(0.5)) place_phrase();
  }

  // Numbers and symbols: "the ticket costs $ 20 .", "about 50 % of the students sing ."
  void numbers() {
    if (chance(0.6)) {
      noun_phrase(Number::singular, Head::thing, {});
      add(chance(0.5) ? "costs" : "cost", VERB);
      add("$", SYM);
      const char* amounts[] = {"5", "20", "99", "150"};
      add(pick(amounts), NUM);
    } else {
      if (chance(0.5)) add("about", ADV);
      const char* percents[] = {"10", "50", "75", "90"};
      add(pick(percents), NUM);
      add("%", SYM);
      add("of", ADP);
      add("the", DET);
      add(choose_noun(Head::animate, Number::plural, false).word, NOUN);
      verb_phrase(pick_verb(kIntransitive), Form::base, Where::main);
    }
    add(".", PUNCT);
  }

  // "this is a good book .", "that 's my dog .", "i like that .", "we sell apples , eggs , etc ."
  void demonstrative() {
    const double r = uniform();
    if (r < 0.5) {
      const bool plural = chance(0.3);
      const char* singular[] = {"this", "that"};
      const char* plurals[] = {"these", "those"};
      add(plural ? pick(plurals) : pick(singular), PRON);
      add(!plural && chance(0.3) ? "'s" : plural ? "are" : "is", AUX);
      if (chance(0.6)) {
        noun_phrase(plural ? Number::plural : Number::singular, Head::any, {});
      } else {
        adjective_predicate();
      }
    } else if (r < 0.8) {
      add(pick(kSpeakers), PRON);
      const char* verbs[] = {"like", "know", "love", "want", "need", "hate"};
      add(pick(verbs), VERB);
      const char* demonstratives[] = {"this", "that", "these", "those"};
      add(pick(demonstratives), PRON);
    } else {
      add(pick(kSpeakers), PRON);
      add(chance(0.5) ? "sell" : "buy", VERB);
      for (int i = 0; i < 3; ++i) {
        add(choose_noun(Head::thing, Number::plural, false).word, NOUN);
        add(",", PUNCT);
      }
      add("etc", X);
    }
    add(".", PUNCT);
  }

  // -- clauses --

  Agr random_agr() {
    const double r = uniform();
    return r < 0.12 ? Agr::first_singular : r < 0.6 ? Agr::third_singular : Agr::other;
  }

  void clause(Where where) {
    const bool animate = chance(0.85);
    const Subject s = subject(random_agr(), animate);
    predicate(s, where, /*copula_only=*/!animate);
  }

  // Writes a subject of the given agreement. Things are subjects only of "be".
  Subject subject(Agr agr, bool animate) {
    Subject s{agr};
    const Head head = animate ? Head::animate : Head::thing;
    const NpOptions options{.modifier = may_nest(), .about = true};
    const double r = uniform();
    if (agr == Agr::first_singular) {
      add("i", PRON);
    } else if (agr == Agr::third_singular) {
      if (r < 0.2) {
        const char* pronouns[] = {"he", "she", "it"};
        add(pick(pronouns), PRON);
        s.contracts = true;
      } else if (r < 0.32) {
        add(pick(kPeopleNames), PROPN);
      } else if (r < 0.36) {
        const char* pronouns[] = {"someone", "everyone", "nobody"};
        add(pick(pronouns), PRON);
      } else {
        s.head = noun_phrase(Number::singular, head, options);
      }
    } else {
      if (r < 0.25) {
        const char* pronouns[] = {"you", "we", "they"};
        add(pick(pronouns), PRON);
      } else if (r < 0.33) {
        coordination(head);
      } else if (r < 0.4) {
        add(choose_noun(head, Number::plural, false).word, NOUN);  // a bare plural: "dogs bark"
      } else {
        s.head = noun_phrase(Number::plural, head, options);
      }
    }
    return s;
  }

  enum class Predicate { simple, modal, negated, perfect, progressive, copula };

  Predicate choose_predicate(Where where) {
    const double r = uniform();
    if (where == Where::relative)
      return r < 0.55 ? Predicate::simple : r < 0.75 ? Predicate::modal : Predicate::copula;
    if (r < 0.36) return Predicate::simple;
    if (r < 0.5) return Predicate::modal;
    if (r < 0.58) return Predicate::negated;
    if (r < 0.66) return Predicate::perfect;
    if (r < 0.75) return Predicate::progressive;
    return Predicate::copula;
  }

  // The verb phrase after a subject: "runs", "can not swim", "has seen the light", "is happy".
  void predicate(const Subject& s, Where where, bool copula_only) {
    const bool past = chance(0.4);
    switch (copula_only ? Predicate::copula : choose_predicate(where)) {
      case Predicate::simple:
        if (chance(0.15)) add(pick(kFrequencyAdverbs), ADV);
        verb_phrase(verb_for(s, kAnyFrame), finite(s.agr, past), where);
        if (where == Where::main && may_nest() && chance(0.15)) {
          add("and", CCONJ);
          verb_phrase(pick_verb(kAnyFrame), finite(s.agr, past), where);
        }
        break;
      case Predicate::modal: {
        const char* modal = pick(kModals);
        add(modal, AUX);
        if (chance(0.15)) add("not", PART);
        if (chance(0.12)) {
          add("be", AUX);
          be_complement(s, where);
        } else {
          const bool echo = std::string_view(modal) == "can" && chance(kEcho);  // "can can"
          verb_phrase(echo ? noun_spelled("can")->verb : verb_for(s, kAnyFrame), Form::base, where);
        }
        break;
      }
      case Predicate::negated:
        add(do_form(s.agr, past), AUX);
        add("not", PART);
        verb_phrase(verb_for(s, kAnyFrame), Form::base, where);
        break;
      case Predicate::perfect:
        add(have_form(s.agr, past), AUX);
        if (chance(0.15)) add("not", PART);
        verb_phrase(verb_for(s, kAnyFrame), Form::participle, where);
        break;
      case Predicate::progressive:
        add(be(s.agr, past), AUX);
        if (chance(0.1)) add("not", PART);
        verb_phrase(verb_for(s, kAnyFrame), Form::ing, where);
        break;
      case Predicate::copula:
        add(s.contracts && !past && chance(0.3) ? "'s" : be(s.agr, past), AUX);
        if (chance(0.1)) add("not", PART);
        be_complement(s, where);
        break;
    }
  }

  // After a form of "be": "happy", "a teacher", "in the garden", "here", "like a bird".
  void be_complement(const Subject& s, Where where) {
    const double r = uniform();
    if (where == Where::relative || r < 0.45) {
      adjective_predicate();
    } else if (r < 0.65) {
      noun_phrase(s.agr == Agr::other ? Number::plural : Number::singular, Head::any, {});
    } else if (r < 0.8) {
      place_phrase();
    } else if (r < 0.86) {
      const char* adverbs[] = {"here", "there", "back"};
      add(pick(adverbs), ADV);
    } else if (r < 0.93) {
      add("like", ADP);
      comparison();
    } else {
      add("as", ADV);
      add(pick(kAdjectives), ADJ);
      add("as", ADP);
      comparison();
    }
  }

  // "happy", "very tall", "big and clean", "well"
  void adjective_predicate() {
    if (chance(0.2)) add(pick(kDegreeAdverbs), ADV);
    add(chance(0.04) ? "well" : pick(kAdjectives), ADJ);
    if (chance(0.15)) {
      add("and", CCONJ);
      add(pick(kAdjectives), ADJ);
    }
  }

  const Verb& pick_verb(unsigned frames) {
    for (;;) {
      const Verb& v = chance(kNounVerbShareOfVerbs) ? pick(kNounVerbs).verb : pick(kVerbs);
      if (v.frames & frames) return v;
    }
  }

  // The subject's own noun as a verb now and then: "the cook cooks", "the fish fish".
  const Verb& verb_for(const Subject& s, unsigned frames) {
    if (s.head != nullptr && (s.head->verb.frames & frames) && chance(kEcho)) return s.head->verb;
    return pick_verb(frames);
  }

  void verb_phrase(const Verb& v, Form form, Where where) {
    const std::string word = form_of(v, form);
    add(word, VERB);
    complement(v, word, where);
  }

  // What follows the verb, by one of its frames.
  void complement(const Verb& v, const std::string& word, Where where) {
    unsigned frames[5];
    int n = 0;
    for (unsigned f : {kIntransitive, kTransitive, kThatClause, kToInfinitive, kMotion})
      if (v.frames & f) frames[n++] = f;
    switch (frames[rng_.next_below(n)]) {
      case kIntransitive:
        intransitive_tail(where);
        break;
      case kMotion:
        motion_tail(where);
        break;
      case kTransitive:
        object(word, (v.frames & kBareObject) != 0, where);
        transitive_tail(where);
        break;
      case kThatClause:
        if (may_nest() && chance(0.7)) {
          add("that", SCONJ);
          nested([&] { clause(where); });
        } else {
          add("so", ADV);  // "i think so"
        }
        break;
      case kToInfinitive:
        if (may_nest()) {
          add("to", PART);
          nested([&] { verb_phrase(pick_verb(kIntransitive | kTransitive | kMotion), Form::base, where); });
        }
        break;
    }
  }

  void intransitive_tail(Where where) {
    const double r = uniform();
    if (where == Where::relative) {
      if (r < 0.2) {
        add(pick(kMannerAdverbs), ADV);
      } else if (r < 0.4) {
        add(pick(kFlatAdverbs), ADV);
      }
      return;
    }
    if (r < 0.25) return;
    if (r < 0.4) {
      add(pick(kMannerAdverbs), ADV);
    } else if (r < 0.52) {
      add(pick(kFlatAdverbs), ADV);
    } else if (r < 0.56) {
      add("as", ADV);
      add(kFlatAdverbs[rng_.next_below(5)], ADV);  // not "well": "as well as" is a fixed phrase
      add("as", ADP);
      comparison();
    } else if (r < 0.64) {
      add("like", ADP);
      comparison();
    } else if (r < 0.84) {
      place_phrase();
    } else if (r < 0.92) {
      time_phrase();
    } else {
      add(pick(kTimeAdverbs), ADV);
    }
  }

  void transitive_tail(Where where) {
    const double r = uniform();
    if (where == Where::relative) {
      if (r < 0.2) add(pick(kMannerAdverbs), ADV);
      return;
    }
    if (r < 0.45) return;
    if (r < 0.65) {
      place_phrase();
    } else if (r < 0.75) {
      add(pick(kMannerAdverbs), ADV);
    } else if (r < 0.83) {
      add(pick(kTimeAdverbs), ADV);
    } else if (r < 0.9) {
      add("like", ADP);
      comparison();
    } else {
      time_phrase();
    }
  }

  // "came back", "sat down on the bench", "walked down the road", "flew to Paris"
  void motion_tail(Where where) {
    if (where == Where::relative) {
      if (chance(0.5)) add(pick(kParticles), ADV);
      return;
    }
    if (chance(0.35)) {
      add(pick(kParticles), ADV);
      if (chance(0.2)) place_phrase();
      return;
    }
    const char* adposition = pick(kMotionAdpositions);
    add(adposition, ADP);
    if (std::string_view(adposition) == "to" && chance(0.3)) {
      add(pick(kPlaceNames), PROPN);
    } else {
      noun_phrase(Number::any, Head::thing, {});
    }
  }

  // The object of a transitive verb. Now and then the verb's own spelling as a noun: "i saw a
  // saw", "they watch the watches".
  void object(const std::string& verb_word, bool bare_ok, Where where) {
    const NounVerb* echo = noun_spelled(verb_word);
    if (echo != nullptr && chance(kEcho)) {
      NounChoice n{verb_word};
      n.plural = echo->noun.pl != nullptr && verb_word == echo->noun.pl && verb_word != echo->noun.sg;
      n.mass = echo->noun.pl == nullptr;
      n.thing = !echo->animate;
      n.nv = echo;
      write_noun_phrase(n, {});
      return;
    }
    const double r = uniform();
    if (r < 0.58) {
      noun_phrase(Number::any, Head::any, {.modifier = where == Where::main, .about = true});
    } else if (r < 0.7) {
      add(pick(kObjectPronouns), PRON);
    } else if (r < 0.78) {
      add(pick(kPeopleNames), PROPN);
    } else if (r < 0.9 && bare_ok) {
      // A bare plural or mass noun: "they sell books", "we need water".
      if (chance(0.5)) {
        add(choose_noun(chance(0.3) ? Head::animate : Head::thing, Number::plural, false).word, NOUN);
      } else {
        add(mass_noun().word, NOUN);
      }
    } else if (r < 0.95 && where == Where::main) {
      coordination(Head::any);
    } else {
      noun_phrase(Number::any, Head::any, {});
    }
  }

  // -- noun phrases --

  NounChoice mass_noun() {
    NounChoice n;
    n.mass = true;
    if (chance(kNounVerbShareOfThings)) {
      do n.nv = &pick(kNounVerbs);
      while (n.nv->noun.pl != nullptr);
      n.word = n.nv->noun.sg;
    } else {
      n.word = pick(kMass).sg;
    }
    return n;
  }

  // Chooses a noun of the given kind and number; `noun_verbs` allows the ambiguous ones.
  NounChoice choose_noun(Head head, Number number, bool noun_verbs) {
    if (head == Head::any) {
      const double r = uniform();
      if (r < 0.1 && number != Number::plural && noun_verbs) return mass_noun();
      head = r < 0.4 ? Head::animate : Head::thing;
    }
    NounChoice n;
    n.plural = number == Number::plural || (number == Number::any && chance(0.3));
    const Noun* noun = nullptr;
    if (head == Head::time) {
      noun = &pick(kTimes);
      n.time = true;
    } else if (head == Head::animate) {
      if (noun_verbs && chance(kNounVerbShareOfAnimates)) {
        do n.nv = &pick(kNounVerbs);
        while (!n.nv->animate);
        noun = &n.nv->noun;
      } else if (chance(0.5)) {
        noun = &pick(kPeople);
        n.person = true;
      } else {
        noun = &pick(kAnimals);
      }
    } else {
      n.thing = true;
      if (noun_verbs && chance(kNounVerbShareOfThings)) {
        do n.nv = &pick(kNounVerbs);
        while (n.nv->animate || n.nv->noun.pl == nullptr);
        noun = &n.nv->noun;
      } else {
        noun = &pick(kThings);
      }
    }
    n.word = n.plural ? noun->pl : noun->sg;
    return n;
  }

  // Writes a noun phrase and returns its head when that is an animate noun-verb ("the cook").
  const NounVerb* noun_phrase(Number number, Head head, NpOptions options) {
    const NounChoice n = choose_noun(head, number, true);
    write_noun_phrase(n, options);
    return n.nv != nullptr && n.nv->animate ? n.nv : nullptr;
  }

  void write_noun_phrase(const NounChoice& n, NpOptions options) {
    determiner(n, options);
    if (chance(0.3)) adjectives(n);
    add(n.word, NOUN);
    if (!options.modifier || !may_nest()) return;
    if (chance(0.12)) {
      nested([&] { relative_clause(n); });
    } else if (chance(0.12)) {
      nested([&] { noun_modifier(n); });
    }
  }

  void determiner(const NounChoice& n, NpOptions options) {
    const double r = uniform();
    if (n.time) {
      add(r < 0.7 ? "the" : r < 0.8 ? "this" : r < 0.9 ? "that" : "every", DET);
    } else if (n.mass) {
      if (r < 0.35) {
        add("the", DET);
      } else if (r < 0.5) {
        add("some", DET);
      } else if (r < 0.6) {
        add(pick(kPossessives), PRON);
      } else if (r < 0.68) {
        add(chance(0.5) ? "this" : "that", DET);
      } else if (r < 0.73) {
        add("no", DET);
      } else if (r < 0.8) {
        genitive();
      } else {
        add(chance(0.7) ? "a" : "the", DET);  // "a cup of tea", "a glass of water"
        add(pick(kContainers), NOUN);
        add("of", ADP);
      }
    } else if (!n.plural) {
      if (r < 0.4) {
        add("the", DET);
      } else if (r < 0.65) {
        add("a", DET);
      } else if (r < 0.75) {
        add(pick(kPossessives), PRON);
      } else if (r < 0.83) {
        add(chance(0.5) ? "this" : "that", DET);
      } else if (r < 0.87) {
        add(chance(0.5) ? "every" : "each", DET);
      } else if (r < 0.9) {
        add("no", DET);
      } else if (r < 0.93) {
        add("one", NUM);
      } else {
        genitive();
      }
    } else {
      if (r < 0.4) {
        add("the", DET);
      } else if (r < 0.52) {
        add(pick(kPossessives), PRON);
      } else if (r < 0.6) {
        add(chance(0.5) ? "these" : "those", DET);
      } else if (r < 0.68) {
        add("some", DET);
      } else if (r < 0.83) {
        if (options.about && chance(0.2)) add("about", ADV);  // "about ten dogs"
        add(pick(kNumbers), NUM);
      } else if (r < 0.86) {
        add("no", DET);
      } else if (r < 0.9 && options.both) {
        add("both", DET);
      } else {
        genitive();
      }
    }
  }

  // "the man 's", "Anna 's": a possessor before the noun.
  void genitive() {
    if (chance(0.3)) {
      add(pick(kPeopleNames), PROPN);
    } else {
      add("the", DET);
      add(choose_noun(Head::animate, Number::singular, true).word, NOUN);
    }
    add("'s", PART);
  }

  // One or two adjectives before the noun: "a very old", "the back", "the only".
  void adjectives(const NounChoice& n) {
    if (chance(0.1)) {
      const char* adjective = pick(kAttributiveOnly);
      const bool only = std::string_view(adjective) == "only";
      if (only ? out_.words.back() == "the" : n.thing) {
        add(adjective, ADJ);
        return;
      }
    }
    if (chance(0.15)) {
      const char* degree[] = {"very", "quite", "really"};
      add(pick(degree), ADV);
    }
    const char* first = pick(kAdjectives);
    add(first, ADJ);
    if (chance(0.15)) {
      const char* second = pick(kAdjectives);
      if (second != first) add(second, ADJ);
    }
  }

  // After the noun: "in the garden", or for a story and the like "about the war".
  void noun_modifier(const NounChoice& n) {
    const bool topic =
        std::find(std::begin(kTopicNouns), std::end(kTopicNouns), n.word) != std::end(kTopicNouns);
    if (topic && chance(0.5)) {
      add("about", ADP);
      noun_phrase(Number::any, Head::any, {});
    } else {
      place_phrase();
    }
  }

  // "that barks", "who saw the cat", "which the man read": a relative clause about `head`.
  void relative_clause(const NounChoice& head) {
    const char* pronoun = chance(0.5) ? "that" : head.person ? "who" : "which";
    add(pronoun, PRON);
    const Agr agr = head.plural ? Agr::other : Agr::third_singular;
    if (chance(0.65)) {
      predicate({agr}, Where::relative, false);
    } else {
      const Agr inner = random_agr();
      const char* singular[] = {"he", "she"};
      const char* plural[] = {"we", "they"};
      if (inner == Agr::first_singular) {
        add("i", PRON);
      } else if (chance(0.4)) {
        add(inner == Agr::third_singular ? pick(singular) : pick(plural), PRON);
      } else {
        add("the", DET);
        const Number number = inner == Agr::other ? Number::plural : Number::singular;
        add(choose_noun(Head::animate, number, true).word, NOUN);
      }
      add(form_of(pick_verb(kTransitive), finite(inner, chance(0.5))), VERB);
      if (chance(0.15)) add(pick(kMannerAdverbs), ADV);
    }
  }

  // "the dog and the cat", "Anna and Tom", "both dogs and cats"
  void coordination(Head head) {
    if (chance(0.2)) add("both", CCONJ);
    for (int i = 0; i < 2; ++i) {
      if (i == 1) add("and", CCONJ);
      const double r = uniform();
      if (r < 0.25 && head != Head::thing) {
        add(pick(kPeopleNames), PROPN);
      } else if (r < 0.45) {
        add(choose_noun(head, Number::plural, false).word, NOUN);
      } else {
        noun_phrase(Number::any, head, {.both = false});
      }
    }
  }

  // What "like" and "as ... as" compare with: "like a bird", "as fast as Tom".
  void comparison() {
    if (chance(0.25)) {
      add(pick(kPeopleNames), PROPN);
    } else {
      noun_phrase(Number::any, Head::animate, {});
    }
  }

  // "in the garden", "with Anna", "near them"
  void place_phrase() {
    add(pick(kPlaceAdpositions), ADP);
    const double r = uniform();
    if (r < 0.15) {
      add(pick(kPlaceNames), PROPN);
    } else if (r < 0.25) {
      add(pick(kObjectPronouns), PRON);
    } else {
      noun_phrase(Number::any, Head::any, {});
    }
  }

  // "after the war", "until the morning", "for a while"
  void time_phrase() {
    if (chance(0.12)) {
      add(chance(0.5) ? "for" : "after", ADP);
      add("a", DET);
      add("while", NOUN);
      return;
    }
    add(pick(kTimeAdpositions), ADP);
    noun_phrase(Number::singular, Head::time, {});
  }
};

}  // namespace

// ---- The corpus: the grammar's sentences, split and written ------------------------------------

std::vector<TaggedSentence> generate_sentences(int64_t n, uint64_t seed) {
  if (n < 0) throw ValueError("generate_sentences: n must be >= 0, got " + std::to_string(n));
  SentenceGenerator generator(seed);
  std::vector<TaggedSentence> sentences;
  sentences.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) sentences.push_back(generator.sentence());
  return sentences;
}

Corpus generate_corpus(uint64_t seed, const SplitSizes& sizes) {
  if (sizes.train < 0 || sizes.dev < 0 || sizes.test < 0)
    throw ValueError("generate_corpus: sizes must be >= 0, got train " + std::to_string(sizes.train) +
                          ", dev " + std::to_string(sizes.dev) + ", test " + std::to_string(sizes.test));
  std::vector<TaggedSentence> all = generate_sentences(sizes.train + sizes.dev + sizes.test, seed);
  Corpus corpus;
  const auto dev_begin = all.begin() + sizes.train, test_begin = dev_begin + sizes.dev;
  corpus.train.assign(std::make_move_iterator(all.begin()), std::make_move_iterator(dev_begin));
  corpus.dev.assign(std::make_move_iterator(dev_begin), std::make_move_iterator(test_begin));
  corpus.test.assign(std::make_move_iterator(test_begin), std::make_move_iterator(all.end()));
  return corpus;
}

void write_corpus(const Corpus& corpus, const std::string& dir) {
  std::filesystem::create_directories(dir);
  const std::filesystem::path root(dir);
  // All three or none: a directory where one of them goes is refused before any is replaced.
  for (const char* name : {"train.conllu", "dev.conllu", "test.conllu"}) {
    if (std::filesystem::exists(root / name) && !std::filesystem::is_regular_file(root / name))
      throw ValueError("write_corpus: " + (root / name).string() + " is not a file: move it away");
  }
  write_conllu((root / "train.conllu").string(), corpus.train);
  write_conllu((root / "dev.conllu").string(), corpus.dev);
  write_conllu((root / "test.conllu").string(), corpus.test);
}

}  // namespace qkv::data
