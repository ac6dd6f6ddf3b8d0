-- Wireshark/tshark dissector for iwarpx datagram iWARP over UDP (docs/wire.md,
-- section "Datagram iWARP over UDP"; codec: prov/iwarpx/src/wire/dgram.{h,cc}).
--
-- Usage:
--   tshark -X lua_script:tools/wireshark/iwarpx_dgram.lua -r capture.pcap -V
--   (or copy the file to ~/.local/lib/wireshark/plugins/)
--
-- Registration:
--   * heuristically on every UDP payload: magic 0x6977, version 1, a known
--     type and a total length that matches ulpdu_length (cheap and strict);
--   * on the UDP ports of the preference "iwarpx_dgram.ports" (empty by
--     default; -o "iwarpx_dgram.ports:7000-7010"), and by "Decode As".
--
-- The ULPDU (an RFC 5041 DDP segment carrying RFC 5040 RDMAP) is handed to
-- Wireshark's built-in dissector "iwarp_ddp_rdmap", looked up by name. It is
-- registered by name in Wireshark 4.0 (Dissector.get works) even though it is
-- not in any Decode-As table. If it is missing, the ULPDU is shown as data.
--
-- CRC32c (Castagnoli) is verified when the C flag is set; the wire field is
-- the little-endian image of the CRC value, as in MPA (WIRE.md §2.3).

local p = Proto("iwarpx_dgram", "iwarpx Datagram iWARP")

local kHeaderSize = 40
local kCrcSize = 4
local kMagic = 0x6977
local kVersion = 1
local kMaxSize = 65507

local types = { [1] = "UD data", [2] = "RD data", [3] = "RD ack", [4] = "RD control" }
local ctrl_ops = { [0] = "none", [1] = "RESET", [2] = "PROBE" }

local f = p.fields
f.magic = ProtoField.uint16("iwarpx_dgram.magic", "Magic", base.HEX)
f.version = ProtoField.uint8("iwarpx_dgram.version", "Version", base.DEC)
f.type = ProtoField.uint8("iwarpx_dgram.type", "Type", base.DEC, types)
f.flags = ProtoField.uint16("iwarpx_dgram.flags", "Flags", base.HEX)
f.flag_c = ProtoField.bool("iwarpx_dgram.flags.crc", "C (CRC valid)", 16, nil, 0x8000)
f.flag_a = ProtoField.bool("iwarpx_dgram.flags.ack", "A (ack fields valid)", 16, nil, 0x4000)
f.flag_s = ProtoField.bool("iwarpx_dgram.flags.sack", "S (SACK bitmap valid)", 16, nil, 0x2000)
f.flag_y = ProtoField.bool("iwarpx_dgram.flags.syn", "Y (session opening)", 16, nil, 0x1000)
f.flag_r = ProtoField.bool("iwarpx_dgram.flags.ack_request", "R (ack requested)", 16, nil, 0x0800)
f.flag_b = ProtoField.bool("iwarpx_dgram.flags.bundle", "B (bundle of records)", 16, nil, 0x0400)
f.flag_rsvd = ProtoField.uint16("iwarpx_dgram.flags.reserved", "Reserved", base.HEX, nil, 0x03FF)
f.record_length = ProtoField.uint16("iwarpx_dgram.record.length", "Record length", base.DEC)
f.record_seq = ProtoField.uint32("iwarpx_dgram.record.seq", "Record sequence number", base.DEC)
f.ulpdu_length = ProtoField.uint16("iwarpx_dgram.ulpdu_length", "ULPDU length", base.DEC)
f.credits = ProtoField.uint16("iwarpx_dgram.credits", "Credits", base.DEC)
f.ctrl_op = ProtoField.uint8("iwarpx_dgram.ctrl_op", "Control op", base.DEC, ctrl_ops)
f.reserved = ProtoField.uint8("iwarpx_dgram.reserved", "Reserved", base.HEX)
f.dst_qpn = ProtoField.uint32("iwarpx_dgram.dst_qpn", "Destination QPN", base.DEC_HEX)
f.src_qpn = ProtoField.uint32("iwarpx_dgram.src_qpn", "Source QPN", base.DEC_HEX)
f.session = ProtoField.uint32("iwarpx_dgram.session", "Session", base.HEX)
f.echo_session = ProtoField.uint32("iwarpx_dgram.echo_session", "Echo session", base.HEX)
f.seq = ProtoField.uint32("iwarpx_dgram.seq", "Sequence number", base.DEC)
f.ack = ProtoField.uint32("iwarpx_dgram.ack", "Ack (next expected)", base.DEC)
f.sack = ProtoField.uint32("iwarpx_dgram.sack", "SACK bitmap", base.HEX)
f.ulpdu = ProtoField.bytes("iwarpx_dgram.ulpdu", "ULPDU")
f.pad = ProtoField.bytes("iwarpx_dgram.pad", "Pad")
f.crc = ProtoField.uint32("iwarpx_dgram.crc", "CRC32c (wire bytes)", base.HEX)
f.crc_status = ProtoField.string("iwarpx_dgram.crc.status", "CRC status")

local e_bad_crc = ProtoExpert.new("iwarpx_dgram.bad_crc", "Bad CRC32c", expert.group.CHECKSUM,
                                  expert.severity.ERROR)
local e_bad_length = ProtoExpert.new("iwarpx_dgram.bad_length",
                                     "Datagram length does not match ULPDU length",
                                     expert.group.MALFORMED, expert.severity.ERROR)
local e_reserved = ProtoExpert.new("iwarpx_dgram.reserved_nonzero",
                                   "Reserved or unused field is not zero",
                                   expert.group.MALFORMED, expert.severity.ERROR)
p.experts = { e_bad_crc, e_bad_length, e_reserved }

p.prefs.ports = Pref.range("UDP ports", "", "UDP ports decoded as iwarpx datagrams", 65535)
p.prefs.verify_crc = Pref.bool("Verify CRC", true, "Verify CRC32c when the C flag is set")

-- CRC32c, reflected polynomial 0x82F63B78, table driven (Lua 5.2 bit32).
local crc_table = {}
for i = 0, 255 do
  local c = i
  for _ = 1, 8 do
    if bit32.band(c, 1) ~= 0 then
      c = bit32.bxor(bit32.rshift(c, 1), 0x82F63B78)
    else
      c = bit32.rshift(c, 1)
    end
  end
  crc_table[i] = c
end

local function crc32c(bytes, len)
  local c = 0xFFFFFFFF
  for i = 0, len - 1 do
    c = bit32.bxor(bit32.rshift(c, 8), crc_table[bit32.band(bit32.bxor(c, bytes:get_index(i)), 0xFF)])
  end
  return bit32.bxor(c, 0xFFFFFFFF)
end

local function pad_length(n) return (4 - n % 4) % 4 end

local ddp_rdmap = nil
do
  local ok, d = pcall(Dissector.get, "iwarp_ddp_rdmap")
  if ok then ddp_rdmap = d end
end

local function dissect(tvb, pinfo, tree)
  local len = tvb:len()
  if len < kHeaderSize + kCrcSize then return 0 end
  if tvb(0, 2):uint() ~= kMagic then return 0 end

  pinfo.cols.protocol = "iWARP-DG"
  local t = tree:add(p, tvb(), "iwarpx Datagram iWARP")
  local type = tvb(3, 1):uint()
  local flags = tvb(4, 2):uint()
  local ulpdu_length = tvb(6, 2):uint()
  local has_ack = bit32.band(flags, 0x4000) ~= 0

  t:add(f.magic, tvb(0, 2))
  t:add(f.version, tvb(2, 1))
  t:add(f.type, tvb(3, 1))
  local ft = t:add(f.flags, tvb(4, 2))
  ft:add(f.flag_c, tvb(4, 2))
  ft:add(f.flag_a, tvb(4, 2))
  ft:add(f.flag_s, tvb(4, 2))
  ft:add(f.flag_y, tvb(4, 2))
  ft:add(f.flag_r, tvb(4, 2))
  ft:add(f.flag_b, tvb(4, 2))
  local rsvd_item = ft:add(f.flag_rsvd, tvb(4, 2))
  if bit32.band(flags, 0x03FF) ~= 0 then rsvd_item:add_proto_expert_info(e_reserved) end
  local len_item = t:add(f.ulpdu_length, tvb(6, 2))
  t:add(f.credits, tvb(8, 2))
  t:add(f.ctrl_op, tvb(10, 1))
  local r_item = t:add(f.reserved, tvb(11, 1))
  if tvb(11, 1):uint() ~= 0 then r_item:add_proto_expert_info(e_reserved) end
  t:add(f.dst_qpn, tvb(12, 4))
  t:add(f.src_qpn, tvb(16, 4))
  t:add(f.session, tvb(20, 4))
  t:add(f.echo_session, tvb(24, 4))
  t:add(f.seq, tvb(28, 4))
  t:add(f.ack, tvb(32, 4))
  t:add(f.sack, tvb(36, 4))

  local type_name = types[type] or ("type " .. type)
  local info = string.format("%s %u -> %u", type_name, tvb(16, 4):uint(), tvb(12, 4):uint())
  if type == 4 then info = info .. " " .. (ctrl_ops[tvb(10, 1):uint()] or "?") end
  if type ~= 1 then info = info .. string.format(" seq=%u", tvb(28, 4):uint()) end
  if has_ack then info = info .. string.format(" ack=%u", tvb(32, 4):uint()) end
  if bit32.band(flags, 0x2000) ~= 0 then info = info .. string.format(" sack=0x%08x", tvb(36, 4):uint()) end
  if bit32.band(flags, 0x1000) ~= 0 then info = info .. " SYN" end
  if bit32.band(flags, 0x0800) ~= 0 then info = info .. " ACK-REQ" end
  local bundle = bit32.band(flags, 0x0400) ~= 0
  if bundle then info = info .. " BUNDLE" end
  if ulpdu_length > 0 then info = info .. string.format(" len=%u", ulpdu_length) end

  local pad = pad_length(ulpdu_length)
  local expected = kHeaderSize + ulpdu_length + pad + kCrcSize
  if expected ~= len then
    len_item:add_proto_expert_info(e_bad_length,
                                   string.format("Datagram is %u bytes, ULPDU length implies %u", len, expected))
    pinfo.cols.info = info .. " [bad length]"
    return len
  end

  if bundle and ulpdu_length > 0 then
    -- docs/wire.md 3.6.1: records u16 length | DDP segment | pad to 4; record i is seq + i.
    local at = kHeaderSize
    local stop = kHeaderSize + ulpdu_length
    local i = 0
    local parts = {}
    while at + 2 <= stop do
      local rlen = tvb(at, 2):uint()
      local size = bit32.band(2 + rlen + 3, bit32.bnot(3))
      if rlen < 14 or at + size > stop then
        len_item:add_proto_expert_info(e_bad_length, "Bad bundle record")
        info = info .. " [bad record]"
        break
      end
      local rt = t:add(f.ulpdu, tvb(at + 2, rlen))
      rt:add(f.record_length, tvb(at, 2))
      rt:add(f.record_seq, tvb(28, 4), tvb(28, 4):uint() + i)
      if ddp_rdmap ~= nil then
        pcall(function() ddp_rdmap:call(tvb(at + 2, rlen):tvb(), pinfo, tree) end)
        parts[#parts + 1] = (tostring(pinfo.cols.info):gsub("^%d+ > %d+ ", ""))
      end
      at = at + size
      i = i + 1
    end
    info = info .. string.format(" records=%u", i)
    if #parts > 0 then info = info .. " | " .. table.concat(parts, " | ") end
  elseif ulpdu_length > 0 then
    local ulpdu_tvb = tvb(kHeaderSize, ulpdu_length):tvb()
    t:add(f.ulpdu, tvb(kHeaderSize, ulpdu_length))
    if pad > 0 then t:add(f.pad, tvb(kHeaderSize + ulpdu_length, pad)) end
    if ddp_rdmap ~= nil then
      pcall(function() ddp_rdmap:call(ulpdu_tvb, pinfo, tree) end)
      -- iwarp_ddp_rdmap writes "<sport> > <dport> <message> [last DDP segment]"
      -- into Info; keep the message part after our own summary.
      local ddp_info = tostring(pinfo.cols.info):gsub("^%d+ > %d+ ", "")
      info = info .. " | " .. ddp_info
    end
  end

  local crc_off = len - kCrcSize
  local crc_item = t:add(f.crc, tvb(crc_off, 4))
  local status
  if bit32.band(flags, 0x8000) == 0 then
    status = "not used (C flag clear)"
  elseif not p.prefs.verify_crc then
    status = "not verified"
  else
    local want = crc32c(tvb(0, crc_off):bytes(), crc_off)
    local got = tvb(crc_off, 4):le_uint()
    if want == got then
      status = string.format("Good (0x%08x)", want)
    else
      status = string.format("Bad (0x%08x, should be 0x%08x)", got, want)
      crc_item:add_proto_expert_info(e_bad_crc, "Bad CRC32c, should be " .. string.format("0x%08x", want))
      info = info .. " [bad CRC]"
    end
  end
  t:add(f.crc_status, tvb(crc_off, 4), status)
  pinfo.cols.info = info
  pinfo.cols.protocol = "iWARP-DG"
  return len
end

function p.dissector(tvb, pinfo, tree)
  return dissect(tvb, pinfo, tree)
end

local function heuristic(tvb, pinfo, tree)
  local len = tvb:len()
  if len < kHeaderSize + kCrcSize or len > kMaxSize then return false end
  if tvb(0, 2):uint() ~= kMagic or tvb(2, 1):uint() ~= kVersion then return false end
  local type = tvb(3, 1):uint()
  if type < 1 or type > 4 then return false end
  local ulpdu_length = tvb(6, 2):uint()
  if kHeaderSize + ulpdu_length + pad_length(ulpdu_length) + kCrcSize ~= len then return false end
  dissect(tvb, pinfo, tree)
  return true
end

p:register_heuristic("udp", heuristic)

local udp_port = DissectorTable.get("udp.port")
udp_port:add_for_decode_as(p)
local registered_ports = ""
function p.prefs_changed()
  local ports = tostring(p.prefs.ports)
  if ports == registered_ports then return end
  if registered_ports ~= "" then udp_port:remove(registered_ports, p) end
  if ports ~= "" then udp_port:add(ports, p) end
  registered_ports = ports
end
