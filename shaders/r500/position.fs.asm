-- position.fs.asm: a procedural gradient from the pixel centre and the hit flag.
-- temp[3] = (x, y, 0, 1) in [-1, 1] (y up) and temp[2].a = 1 on a hit, 0 on a miss, so
-- out[0] = (0.5·x + 0.5, 0.5·y + 0.5, hit): red grows to the right, green upwards, and
-- blue marks the pixels whose ray hit a triangle. float(48) is the inline constant 0.5.
--
-- Run:   theia render --shader shaders/r500/position.fs.asm
-- Try:   theia run-shader shaders/r500/position.fs.asm --in temp3=-1,1,0,1 --in temp2=0,0,5,1

src0.rgb = temp[3] ,   -- (x, y, 0)
src1.rgb = float(48) : -- 0.5
  temp[4].rg = MAD src0.rg_ src1.rr_ src1.rr_ ;

OUT TEX_SEM_WAIT
src0.rgb = temp[4] ,
src0.a   = temp[2] :   -- hit flag
  out[0].a   = MAX src0.1 src0.1 ,
  out[0].rgb = MAX src0.rga src0.rga ;
