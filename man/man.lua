-- pandoc Lua filter for the man pages made from docs/*.md: a man page has no
-- room for wide tables or web links. Each table becomes a definition list
-- (its first cell the term, every other cell "Header: cell"), each link its
-- text; a top-level heading that is not a man section (NAME, SYNOPSIS: all
-- capitals) is the page's web title and is dropped, the headings below it
-- move up one level; long code (cipher lists) may break after ":" and ",".
local stringify = pandoc.utils.stringify

local function cell_blocks(cell)
  return cell.contents or cell  -- pandoc >= 2.10: Cell objects
end

function Table(tbl)
  local headers = {}
  local head_rows = tbl.head and tbl.head.rows or {}
  if #head_rows > 0 then
    for i, c in ipairs(head_rows[1].cells) do headers[i] = stringify(cell_blocks(c)) end
  end
  local items = {}
  for _, body in ipairs(tbl.bodies) do
    for _, row in ipairs(body.body) do
      local cells = row.cells
      local term = pandoc.utils.blocks_to_inlines(cell_blocks(cells[1]))
      local defs = {}
      for i = 2, #cells do
        local inl = pandoc.utils.blocks_to_inlines(cell_blocks(cells[i]))
        if #inl > 0 then
          local para = {}
          if headers[i] and headers[i] ~= "" then
            table.insert(para, pandoc.Strong(headers[i] .. ":"))
            table.insert(para, pandoc.Space())
          end
          for _, x in ipairs(inl) do table.insert(para, x) end
          table.insert(defs, pandoc.Para(para))
        end
      end
      table.insert(items, {term, {defs}})
    end
  end
  return pandoc.DefinitionList(items)
end

function Link(link)
  return link.content
end

function Code(code)
  if #code.text <= 40 then return nil end
  local out = {}
  for piece in code.text:gmatch("[^:,]*[:,]?") do
    if piece ~= "" then
      table.insert(out, pandoc.Code(piece))
      table.insert(out, pandoc.RawInline("man", "\\:"))
    end
  end
  return out
end

-- Headings: a top-level one that is no man section (all capitals) is a web
-- page's title: dropped, and the headings after it move up one level. Then
-- left-aligned text: a line holding a long unbreakable run (a cipher list)
-- cannot be justified, which groff reports as a warning.
function Pandoc(doc)
  local blocks = {pandoc.RawBlock("man", ".ad l")}
  local demote = false
  for _, b in ipairs(doc.blocks) do
    if b.t == "Header" and b.level == 1 and stringify(b) ~= stringify(b):upper() then
      demote = true
    else
      if b.t == "Header" and demote then b.level = math.max(1, b.level - 1) end
      table.insert(blocks, b)
    end
  end
  doc.blocks = blocks
  return doc
end
