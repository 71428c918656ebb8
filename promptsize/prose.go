package promptsize

import (
	"strconv"
	"strings"
)

// Prose returns the first paragraphs of the Builder's default corpus, at
// least minBytes long: English prose written for this project (Apache-2.0,
// like the rest of it) and generated deterministically from the sentence
// patterns and word lists in this file, so that a text of any length exists
// without a long passage ever repeating. Every call returns the same text for
// the same minBytes, and a longer result begins with every shorter one.
//
// The text is made of paragraphs separated by a blank line; it contains
// names, numbers, places and punctuation as ordinary prose does, so that a
// prompt cut from it exercises an engine's tokenizer, attention and
// speculative decoding more like a user's request than a repeated atom does.
func Prose(minBytes int) string {
	var g proseGen
	g.state = proseSeed
	var sb strings.Builder
	sb.Grow(minBytes + 1024)
	for sb.Len() < minBytes {
		if sb.Len() > 0 {
			sb.WriteString("\n\n")
		}
		g.paragraph(&sb)
	}
	return sb.String()
}

// proseSeed fixes the default corpus; changing it changes every corpus
// prompt the Builder makes.
const proseSeed = 0x1f0b_e4c7_9a35_d268

// proseGen is a splitmix64 sequence: its own code, so the corpus does not
// depend on a library's random number generator staying the same.
type proseGen struct{ state uint64 }

func (g *proseGen) next() uint64 {
	g.state += 0x9e3779b97f4a7c15
	z := g.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (g *proseGen) intn(n int) int { return int(g.next() % uint64(n)) }

func (g *proseGen) pick(list []string) string { return list[g.intn(len(list))] }

func (g *proseGen) paragraph(sb *strings.Builder) {
	n := 3 + g.intn(5)
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteByte(' ')
		}
		g.sentence(sb)
	}
}

func (g *proseGen) sentence(sb *strings.Builder) {
	pattern := g.pick(prosePatterns)
	var b []byte
	for pattern != "" {
		i := strings.IndexByte(pattern, '{')
		if i < 0 {
			b = append(b, pattern...)
			break
		}
		b = append(b, pattern[:i]...)
		j := strings.IndexByte(pattern[i:], '}')
		slot := pattern[i+1 : i+j]
		pattern = pattern[i+j+1:]
		b = append(b, g.fill(slot)...)
	}
	// Capitalise the first letter (patterns may start with a slot).
	if len(b) > 0 && b[0] >= 'a' && b[0] <= 'z' {
		b[0] -= 'a' - 'A'
	}
	sb.Write(b)
}

func (g *proseGen) fill(slot string) string {
	switch slot {
	case "name":
		return g.pick(proseNames)
	case "noun":
		return g.pick(proseNouns)
	case "nouns":
		return g.pick(proseNounsPlural)
	case "adj":
		return g.pick(proseAdjectives)
	case "verb":
		return g.pick(proseVerbs)
	case "place":
		return g.pick(prosePlaces)
	case "time":
		return g.pick(proseTimes)
	case "adv":
		return g.pick(proseAdverbs)
	case "num":
		return strconv.Itoa(2 + g.intn(97))
	case "big":
		return strconv.Itoa(120 + g.intn(9880))
	case "year":
		return strconv.Itoa(1840 + g.intn(180))
	case "pct":
		return strconv.Itoa(1+g.intn(98)) + " percent"
	}
	panic("promptsize: unknown prose slot " + slot)
}

var prosePatterns = []string{
	"{name} {verb} the {adj} {noun} near {place} {time}.",
	"By {time}, the {nouns} of {place} had grown {adj} and quiet.",
	"Nobody in {place} remembered who first {verb} the {noun}, but everyone agreed it was {adj}.",
	"The {noun} weighed {num} kilograms, which surprised {name} more than it should have.",
	"In {year}, a {adj} {noun} was found beneath {place}, wrapped in oilcloth and string.",
	"{name} kept a ledger of every {noun}; by the end there were {big} entries.",
	"\"We should have {verb} the {noun} sooner,\" {name} said, looking toward {place}.",
	"Some of the {nouns} were {adj}, others merely old, and a few were both.",
	"The road to {place} ran {adv} past orchards, a mill and {num} stone bridges.",
	"About {pct} of the {nouns} had been {verb} before the first frost.",
	"{name} {adv} {verb} a {noun} and carried it back to {place}.",
	"There is a {adj} kind of patience in waiting for a {noun} to dry.",
	"If the {noun} was {adj}, nobody at {place} admitted to noticing.",
	"{time}, {name} wrote a letter about the {nouns}, then tore it into {num} pieces.",
	"Every {noun} in the workshop had a label, and every label was slightly wrong.",
	"The {adj} light over {place} made the {nouns} look older than they were.",
	"Why {name} {verb} the {noun} remains a question for historians, or for gossip.",
	"A census in {year} counted {big} people, {num} mules and one {adj} {noun}.",
	"{name} argued that a {noun} is only as {adj} as the hands that made it.",
	"The council met {time} to discuss the {nouns}; the meeting lasted {num} minutes.",
	"Rain fell on {place} for {num} days, and the {nouns} floated in the lanes.",
	"Between the {noun} and the {noun} stood a {adj} gate that nobody could open.",
	"She {verb} the {noun}, counted to {num}, and {verb} it again.",
	"The price of a {noun} rose by {pct} after the fair at {place}.",
	"{name} preferred {adj} {nouns} to new ones, and said so often.",
	"On the map, {place} was a small circle; on foot, it took {num} hours to cross.",
	"Each spring the {nouns} returned to {place}, {adv} and without ceremony.",
	"It was {time} when the {adj} {noun} finally arrived, {num} weeks late.",
	"The archive at {place} holds {big} letters, most of them about {nouns}.",
	"{name} and {name} {verb} the {noun} together, though neither trusted the other.",
	"A {adj} wind came off the hills and rattled the {nouns} in their frames.",
	"Nothing about the {noun} was {adj}, except the way it caught the light.",
	"When asked about {place}, {name} only said that the {nouns} were {adj} there.",
	"The recipe called for {num} eggs, a {adj} {noun} and a great deal of luck.",
	"After {year}, nobody {verb} a {noun} in {place} without asking {name} first.",
	"Students at {place} learned to measure a {noun} to within {num} millimetres.",
	"The {nouns} were stacked {adv}, {num} to a crate, and shipped before dawn.",
	"{name} once claimed to have {verb} {big} {nouns}, a figure no one checked.",
	"Under the floorboards lay a {adj} {noun}, a coin from {year} and a spoon.",
	"The ferry to {place} left {time}, whether or not the {nouns} were aboard.",
}

var proseNames = []string{
	"Ada", "Bram", "Celeste", "Dmitri", "Elena", "Farid", "Greta", "Hollis",
	"Ines", "Jonah", "Kaito", "Lucia", "Marek", "Nadia", "Oren", "Priya",
	"Quentin", "Rosalind", "Soren", "Tamsin", "Ulla", "Viktor", "Wren", "Yusuf",
	"Zofia", "the miller", "the ferryman", "the youngest clerk", "old Mrs. Pike",
	"the surveyor", "the schoolteacher", "a traveller from the coast",
}

var proseNouns = []string{
	"lantern", "ledger", "bell", "compass", "loom", "barometer", "kettle",
	"wheelbarrow", "telescope", "quilt", "anvil", "weathervane", "ladder",
	"typewriter", "harpsichord", "map", "clock", "bridge", "orchard", "well",
	"chimney", "satchel", "violin", "printing press", "greenhouse", "canal lock",
	"windmill", "ledger book", "stone wall", "rowing boat", "beehive", "teapot",
	"sundial", "mosaic", "seed drill", "signal lamp", "wooden chest", "tapestry",
	"fountain pen", "bicycle", "hay cart", "kiln", "lighthouse", "spinning wheel",
}

var proseNounsPlural = []string{
	"lanterns", "ledgers", "bells", "apples", "pears", "barrels", "fences",
	"letters", "maps", "clocks", "boats", "hives", "quilts", "chimneys",
	"windows", "bridges", "carts", "ropes", "candles", "baskets", "kettles",
	"orchards", "ferries", "pigeons", "geese", "tools", "books", "nets",
	"coins", "keys", "shutters", "lamps", "plums", "stones", "sails",
}

var proseAdjectives = []string{
	"crooked", "patient", "luminous", "weathered", "stubborn", "brittle",
	"generous", "peculiar", "quiet", "enormous", "threadbare", "gleaming",
	"forgotten", "careful", "restless", "ordinary", "uneven", "fragrant",
	"borrowed", "solemn", "cheerful", "narrow", "heavy", "delicate", "rusty",
	"hand-painted", "half-finished", "well-kept", "unlikely", "modest",
}

var proseVerbs = []string{
	"repaired", "painted", "carried", "measured", "sold", "polished", "buried",
	"borrowed", "counted", "mended", "weighed", "sketched", "hid", "found",
	"rebuilt", "inspected", "catalogued", "returned", "sharpened", "unwrapped",
	"lifted", "cleaned", "traded", "described", "dismantled", "tuned",
}

var prosePlaces = []string{
	"the harbour", "Millbrook", "the north field", "the old station",
	"Ashford Cross", "the market square", "the river bend", "Pelham",
	"the upper valley", "the lighthouse road", "Cobble Lane", "the quarry",
	"Westmere", "the abbey garden", "the ferry landing", "Dunmore Hill",
	"the salt marsh", "the county library", "Larkspur", "the east gate",
}

var proseTimes = []string{
	"at dawn", "before noon", "in late autumn", "one wet Tuesday",
	"the following spring", "after supper", "during the long winter",
	"at half past four", "on the last day of the fair", "that evening",
	"a week before the wedding", "in the dry summer", "at first light",
	"shortly after midnight", "on market day",
}

var proseAdverbs = []string{
	"slowly", "carefully", "quietly", "reluctantly", "cheerfully", "twice",
	"secretly", "patiently", "noisily", "hastily", "gently", "stubbornly",
}
